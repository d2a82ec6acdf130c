// Provider notices that arrived before the workflow knew which transaction to wait for (a notice can
// overtake the charge's own result), keyed by transaction id. Bounded: the oldest are dropped.
import type { ProviderNotice } from '../../adapters/provider/types';

export class EarlyNotices {
  private readonly kept = new Map<string, ProviderNotice>();

  constructor(private readonly limit: number) {}

  /** Keeps the notice as the newest; a repeat for the same transaction replaces the one kept. */
  keepLatest(notice: ProviderNotice): void {
    this.kept.delete(notice.transactionId);
    this.remember(notice);
  }

  /** Keeps the notice unless one for its transaction is already kept (the first one counts). */
  keepFirst(notice: ProviderNotice): void {
    if (!this.kept.has(notice.transactionId)) this.remember(notice);
  }

  /** The notice kept for the transaction, if any, no longer kept afterwards. */
  take(transactionId: string): ProviderNotice | null {
    const notice = this.kept.get(transactionId) ?? null;
    this.kept.delete(transactionId);
    return notice;
  }

  private remember(notice: ProviderNotice): void {
    this.kept.set(notice.transactionId, notice);
    if (this.kept.size > this.limit) this.kept.delete(this.kept.keys().next().value!);
  }
}
