// The buyer e-mail activities: each one a call into services/buyer-emails.ts under the e-mail's key, so a
// retried or replayed activity sends nothing twice.
import {
  sendCancellationEmail,
  sendLateRefundEmail,
  sendPaymentConfirmation,
  sendRenewalAuthenticationRequest,
  sendSessionLateRefundEmail,
  type AuthenticationRequestInput,
  type SessionLateRefundEmailInput,
  sendRefundEmail,
  type BuyerEmailDeps,
  type BuyerEmailOutcome,
  type CancellationEmailInput,
  type PaymentConfirmationInput,
  type RefundEmailInput,
} from '../services/buyer-emails';

export function createBuyerEmailActivities(deps: BuyerEmailDeps) {
  return {
    /** The store's purchase confirmation for a paid order (checkout purchase, subscription cycle, charge). */
    async sendPaymentConfirmation(input: PaymentConfirmationInput): Promise<BuyerEmailOutcome> {
      return sendPaymentConfirmation(deps, input);
    },
    /** The refund e-mail: what a refund gave back of an order (one per refund). */
    async sendRefundEmail(input: RefundEmailInput): Promise<BuyerEmailOutcome> {
      return sendRefundEmail(deps, input);
    },
    /** The cancellation e-mail of a subscription canceled by the store (dashboard, DELETE /v1/subscriptions/{id}). */
    // Registered under its old activity name: recorded histories and running workflows call it so.
    async sendCancellationNotice(input: CancellationEmailInput): Promise<BuyerEmailOutcome> {
      return sendCancellationEmail(deps, input);
    },
    /** The renewal the buyer's bank asked them to confirm: the portal link where they confirm it (3-D Secure). */
    async sendRenewalAuthenticationRequest(input: AuthenticationRequestInput): Promise<BuyerEmailOutcome> {
      return sendRenewalAuthenticationRequest(deps, input);
    },
    /** "Your payment arrived after the order closed and was given back" (give-back workflow). */
    async sendLateRefundEmail(input: { storeId: string; orderId: string; key: string }): Promise<BuyerEmailOutcome> {
      return sendLateRefundEmail(deps, input);
    },
    /** The same for an approval given back by a closed checkout session, which has no order (ids only: the address is read here). */
    async sendSessionLateRefundEmail(input: SessionLateRefundEmailInput): Promise<BuyerEmailOutcome> {
      return sendSessionLateRefundEmail(deps, input);
    },
  };
}
