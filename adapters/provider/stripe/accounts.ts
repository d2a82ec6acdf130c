// Which connected Stripe account (Stripe Connect) a store's calls carry: read through a resolver the
// process gives (store/ reads the store's `stripe_account`), cached per store for a short while so an
// operator's change applies within `maxAgeMs`, in a map bounded to `maxEntries` (oldest dropped first).

/** The store's connected account (acct_…), or null: the platform account itself. */
export type StripeAccountResolver = (storeId: string) => Promise<string | null>;

export const ACCOUNT_CACHE_MAX_AGE_MS = 30_000;
export const ACCOUNT_CACHE_MAX_ENTRIES = 10_000;

export const STRIPE_ACCOUNT_ID = /^acct_[0-9A-Za-z]{1,250}$/;

export class ConnectedAccounts {
  private readonly entries = new Map<string, { at: number; account: Promise<string | null> }>();

  constructor(
    private readonly resolve: StripeAccountResolver,
    private readonly maxAgeMs = ACCOUNT_CACHE_MAX_AGE_MS,
    private readonly maxEntries = ACCOUNT_CACHE_MAX_ENTRIES,
    private readonly now: () => number = Date.now,
  ) {}

  /** The store's account now (at most `maxAgeMs` old); concurrent calls for one store share a read. */
  of(storeId: string): Promise<string | null> {
    const at = this.now();
    const hit = this.entries.get(storeId);
    if (hit && at - hit.at < this.maxAgeMs) return hit.account;
    this.entries.delete(storeId);
    const account = this.resolve(storeId);
    this.entries.set(storeId, { at, account });
    account.catch(() => this.entries.delete(storeId));
    // Insertion order is age order: the first key is the oldest entry.
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return account;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** No connected accounts: every store's calls go to the platform account. */
export const platformOnly: StripeAccountResolver = async () => null;

/** The account a charge key is pinned to (kept by the process: store/charge-accounts.ts), and since when. */
export interface PinnedAccount {
  account: string | null;
  pinnedAt: Date;
}

/**
 * Where a charge key's account is pinned before its first request (first writer wins), so every later
 * request under the key, and the events about its payment, go by the account the money was made under.
 */
export interface ChargeAccountPins {
  /** Pins `account` unless the key has a pin; answers the pin that holds. */
  pin(storeId: string, chargeKey: string, account: string | null): Promise<PinnedAccount>;
  /** The key's pin; null when no request under it was made since pins exist. */
  find(storeId: string, chargeKey: string): Promise<PinnedAccount | null>;
}
