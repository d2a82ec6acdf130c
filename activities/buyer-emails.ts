// The buyer e-mail activities: each one a call into services/notices.ts under the notice's key, so a
// retried or replayed activity sends nothing twice.
import {
  sendCancellationNotice,
  sendPaymentConfirmation,
  type CancellationNoticeInput,
  type NoticeDeps,
  type NoticeOutcome,
  type PaymentConfirmationInput,
} from '../services/notices';

export function createNoticeActivities(deps: NoticeDeps) {
  return {
    /** The store's purchase confirmation for a paid order (checkout purchase, subscription cycle, charge). */
    async sendPaymentConfirmation(input: PaymentConfirmationInput): Promise<NoticeOutcome> {
      return sendPaymentConfirmation(deps, input);
    },
    /** The notice of a subscription canceled by the store (dashboard, DELETE /v1/subscriptions/{id}). */
    async sendCancellationNotice(input: CancellationNoticeInput): Promise<NoticeOutcome> {
      return sendCancellationNotice(deps, input);
    },
  };
}
