// The provider reads a page visitor can cause (the 3-D Secure client secret read once after a payment, a
// PIX QR image read once, the confirm re-check) are bounded per session and per store in windows shared
// by every API process (store/rate-counters.ts), beside the per-address page payment limit the routes that
// cause them count in. A page view (GET) never reads the provider: it is served from the session document.
import type { Database } from '../../store/database';
import { SharedRateWindows } from '../../store/rate-counters';

/** Provider reads one session's pages may cause per window. */
export const PAGE_PROVIDER_READS_PER_SESSION = 10;
/** Provider reads all of one store's pages may cause per window (the platform's Stripe rate limit is shared by every store). */
export const PAGE_PROVIDER_READS_PER_STORE = 600;
export const PAGE_PROVIDER_READS_WINDOW_MS = 10 * 60 * 1000;

export interface PageProviderReadLimits {
  perSession: number;
  perStore: number;
  windowMs: number;
}

export const DEFAULT_PAGE_PROVIDER_READS: PageProviderReadLimits = {
  perSession: PAGE_PROVIDER_READS_PER_SESSION,
  perStore: PAGE_PROVIDER_READS_PER_STORE,
  windowMs: PAGE_PROVIDER_READS_WINDOW_MS,
};

export class PageProviderReads {
  private readonly windows: SharedRateWindows;

  constructor(
    db: Database,
    private readonly limits: PageProviderReadLimits = DEFAULT_PAGE_PROVIDER_READS,
  ) {
    this.windows = new SharedRateWindows(db);
  }

  /** Whether one more provider read for this session may go; counted against the session first, then its store. */
  async allow(storeId: string, sessionId: string): Promise<boolean> {
    const { perSession, perStore, windowMs } = this.limits;
    if (!(await this.windows.hit(`page-provider-read:session:${sessionId}`, perSession, windowMs)).allowed) return false;
    return (await this.windows.hit(`page-provider-read:store:${storeId}`, perStore, windowMs)).allowed;
  }
}
