// The payment provider interface. Real providers plug in behind it; the built-in test connection
// (test-connection.ts) implements DESIGN.md's table of test inputs. A card number only ever passes
// through `tokenizeCard` (the provider's own fields, in memory) and `saveCard`; charges name the card by
// its token or saved pm_ id, and what is stored is a pm_ id with brand and last4.

/** A buyer as the provider registers it; phone and document are optional (the test connection reads neither). */
export interface RegisterCustomerInput {
  storeId: string;
  customerId: string;
  email: string;
  name: string | null;
  phone?: string | null;
  /** The customer's identity document (cpf, cnpj, passport, tax_id), number without punctuation. */
  document?: { type: string; number: string } | null;
}

export type RegisterCustomerResult = { ok: true; providerCustomerId: string } | { ok: false; reason: string };

/** A card number as the buyer typed it (spaces and dashes allowed). Never stored, never logged. */
export interface CardInput {
  number: string;
  exp_month?: number;
  exp_year?: number;
  cvc?: string;
  holder_name?: string;
}

/** A card kept at the provider for later charges: all we ever store about it. */
export interface SavedCard {
  /** pm_ id at the provider. */
  paymentMethodId: string;
  type: 'card';
  brand: string;
  last4: string;
  /**
   * False when the card is held by a provider that refuses charges without the buyer present:
   * subscription and usage charges then answer payment_method_not_chargeable before any attempt.
   */
  chargeable: boolean;
}

export type SaveCardResult = { ok: true; card: SavedCard } | { ok: false; code: string; message: string };

/** A card number turned into the provider's token (what its client-side fields do): the number stays there. */
export type TokenizeResult = { ok: true; token: string; brand: string; last4: string } | { ok: false; code: string; message: string };

/**
 * The result of one charge attempt. The same idempotency key always yields the same outcome and
 * transaction: a provider never charges a key twice.
 *  - approved: money captured. `installments`: the plan the provider confirmed (null or absent: paid in full).
 *  - review: left pending until the provider's notice settles it (paid or refused).
 *  - declined: the card was tried and refused; `code` is the provider's decline code (null when it
 *    reported none, shown as `declined`). The provider recorded a transaction.
 *  - refused: the request was refused before the card was tried (no transaction): `provider_error`
 *    (e.g. amount 424242 on the test connection) or `payment_method_not_chargeable`.
 */
export type ChargeOutcome =
  | { status: 'approved'; transactionId: string; installments?: number | null }
  | { status: 'review'; transactionId: string; installments?: number | null }
  | { status: 'declined'; transactionId: string; code: string | null; message: string }
  | { status: 'refused'; transactionId: null; code: 'provider_error' | 'payment_method_not_chargeable'; message: string };

/**
 * A money-moving request the caller may give up on (its activity cancelled or timed out): a connection
 * passes `signal` to its HTTP calls, so a given-up request stops, and one not yet made is never made.
 */
export interface Abortable {
  signal?: AbortSignal;
}

export interface ChargeSavedCardInput extends Abortable {
  storeId: string;
  /** The charge's key: retrying with it returns the first outcome and never charges again. */
  idempotencyKey: string;
  paymentMethodId: string;
  amount: number;
  currency: string;
  description: string | null;
  /** Where the provider's later notice (review settled) should go: the waiting workflow's id. */
  notifyRef?: string | null;
}

export interface ChargeCardInput extends Abortable {
  storeId: string;
  idempotencyKey: string;
  /** The card as the provider's token (tokenizeCard): the number never reaches our workflows. */
  cardToken: string;
  amount: number;
  currency: string;
  description: string | null;
  installments?: number | null;
  /** Keep the card for later charges when approved or in review (subscriptions). */
  saveCard?: boolean;
  customerId?: string | null;
  providerCustomerId?: string | null;
  notifyRef?: string | null;
}

/**
 * The buyer must act in the page before the card is charged (3-D Secure): the page runs the provider's
 * next action with `clientSecret` (Stripe.js) and the outcome arrives as a provider notice on `transactionId`.
 * Only a charge with the buyer present answers it; the test connection never does.
 */
export type ActionRequiredOutcome = { status: 'action_required'; transactionId: string; clientSecret: string };

/** Charge with the buyer present (checkout): the outcome plus the saved card when one was kept. */
export type CheckoutChargeOutcome = (ChargeOutcome | ActionRequiredOutcome) & { card: SavedCard | null };

/** A card saved for later without a charge (a free trial), authenticated by the buyer when the bank asks. */
export interface SetupCardInput extends Abortable {
  storeId: string;
  /** The attempt's key: asking again under it answers the first setup. */
  idempotencyKey: string;
  cardToken: string;
  customerId: string | null;
  providerCustomerId: string | null;
  notifyRef?: string | null;
}

/**
 * A card setup: saved (chargeable off session), declined, or waiting for the buyer's 3-D Secure in the page
 * (`setupId`: the provider's setup, e.g. Stripe's seti_; its client secret only for the page).
 */
export type SetupCardOutcome =
  | { status: 'saved'; card: SavedCard }
  | { status: 'action_required'; setupId: string; clientSecret: string }
  | { status: 'declined'; code: string; message: string };

export interface CreatePixInput extends Abortable {
  storeId: string;
  idempotencyKey: string;
  amount: number;
  currency: string;
  description: string | null;
  customerId?: string | null;
  notifyRef?: string | null;
}

export type PixOutcome =
  | {
      status: 'pending';
      transactionId: string;
      /** The copy-paste ("copia e cola") code the buyer pays with. */
      copyPaste: string;
      /** Unix seconds: 30 minutes after creation on the test connection. */
      expiresAt: number;
      /** The QR code as a PNG the page can show, when the provider hosts one (Stripe); absent on the test connection. */
      qrImageUrl?: string | null;
    }
  | { status: 'refused'; transactionId: null; code: 'provider_error'; message: string };

/** What a pending transaction (review or PIX) became. */
export type SettlementStatus = 'paid' | 'refused' | 'expired';

/** The provider telling us a pending transaction settled. Reaches the waiting workflow as a signal. */
export interface ProviderNotice {
  transactionId: string;
  status: SettlementStatus;
  /** Decline code when refused (e.g. card_declined); null otherwise. */
  code: string | null;
  message: string | null;
  /** The notifyRef given when the transaction was created (a workflow id), if any. */
  notifyRef: string | null;
  /** Unix seconds. */
  settledAt: number;
}

/** `action_required`: a card charged with the buyer present waits for their 3-D Secure (Stripe's requires_action). */
export type TransactionState =
  'approved' | 'review' | 'action_required' | 'declined' | 'pix_pending' | 'paid' | 'refused' | 'expired' | 'voided' | 'refunded';

/**
 * A pending charge fenced before its session closes: `canceled` (the provider will never take it now) or
 * `succeeded` (it took the money first: deliver it as paid). Thrown when the provider's answer is unknown.
 */
/**
 * What the provider holds under an idempotency key: the first answer (what a repeat would get) and
 * the transaction's state now. Null from lookupCharge means no request under the key ever reached it.
 */
export interface ChargeLookup {
  idempotencyKey: string;
  /** The answer the request got (a repeat with the key gets the same). */
  outcome: ChargeOutcome;
  /** Now: a review or PIX may have settled, an approval been refunded. Null when refused before the card. */
  state: TransactionState | null;
  /** The card a checkout charge kept, if any. */
  card: SavedCard | null;
  amount: number;
  currency: string;
  /** Unix seconds when settled; null while pending. */
  settledAt: number | null;
}

/**
 * A keyed cancel of a pending payment (a PIX at its expiry, a card waiting for 3-D Secure): the fence
 * that decides it. `canceled`: the provider confirmed no money is or can be taken under the key (canceled
 * now or before, or already refused/expired). `succeeded`: the buyer paid first; the payment is to be
 * delivered as paid. Anything the provider did not answer (timeout, 5xx, a record not found yet) throws:
 * unknown, asked again under the same key.
 */
export type CancelPendingResult =
  | { status: 'canceled'; transactionId: string }
  | { status: 'succeeded'; transactionId: string; amount: number; currency: string; settledAt: number | null };

/** Money given back: a pending transaction voided (never captured) or a captured one refunded. */
export type RefundResult = { ok: true; status: 'voided' | 'refunded'; transactionId: string } | { ok: false; reason: string };

/**
 * One refund of a captured transaction, whole or partial, asked under our own key (`refundKey`): the
 * provider refunds once per key, and lookupRefund finds it again by that key.
 */
export interface RefundInput extends Abortable {
  storeId: string;
  /** The captured transaction (pi_ at Stripe, tx_ at the test connection). */
  transactionId: string;
  /** Minor units, at most what remains unrefunded at the provider. */
  amount: number;
  /** Our key for this refund (the provider's idempotency key and metadata.refund_key). */
  refundKey: string;
  /** Why, in the merchant's words (kept with the refund at the provider). */
  reason: string | null;
  /**
   * The key the payment was charged under, when known: the refund goes to the provider account that key is
   * pinned to (Stripe: the connected account that took the money), whatever the store's setting is now.
   */
  chargeKey?: string | null;
}

/**
 * What the provider did with a refund:
 *  - refunded: the money went back to the buyer.
 *  - pending: accepted, on its way (asked again by key until it ends).
 *  - failed: refused or failed; nothing went back (`code` says why).
 */
export type RefundOutcome =
  | { status: 'refunded' | 'pending'; refundId: string; amount: number }
  | { status: 'failed'; refundId: string | null; amount: number; code: string; message: string };

export interface TransactionInfo {
  transactionId: string;
  storeId: string;
  idempotencyKey: string;
  kind: 'saved_card' | 'card' | 'pix';
  state: TransactionState;
  amount: number;
  currency: string;
  notifyRef: string | null;
  code: string | null;
  message: string | null;
  /** Unix seconds when approved/paid/refused/expired; null while pending. */
  settledAt: number | null;
}

export type SettleResult = { ok: true; notice: ProviderNotice } | { ok: false; reason: string };

export interface PaymentProvider {
  /** Orders paid through this provider carry this livemode (false on the test connection). */
  readonly livemode: boolean;
  /**
   * Whether a card charge in this currency can be paid in installments here (Stripe: BRL only; the test
   * connection: its configured currencies). The page offers installments only then and refuses them otherwise.
   */
  installmentsAvailable(currency: string): boolean;
  /**
   * The largest amount (minor units) this connection takes in one charge in `currency`; null when it has
   * no maximum of its own. Charges above it are refused by us first (domain/charge-bounds.ts), never sent.
   */
  maxChargeAmount(currency: string): number | null;
  /** Registers a buyer at the provider; a refusal becomes 400 customer_rejected with its reason. */
  registerCustomer(input: RegisterCustomerInput): Promise<RegisterCustomerResult>;
  /** The provider's card fields: a number becomes a token to charge or save (invalid_number refused here). */
  tokenizeCard(input: { storeId: string; card: CardInput }): Promise<TokenizeResult>;
  /** Keeps a card for later charges without charging it: its number (server-side callers) or its token. */
  saveCard(
    input: { storeId: string; customerId: string | null; providerCustomerId?: string | null } & ({ card: CardInput } | { cardToken: string }),
  ): Promise<SaveCardResult>;
  /**
   * Saves a card for off-session charges without charging it (a checkout's free trial), keyed: Stripe's
   * SetupIntent, which may ask the buyer to authenticate first. The test connection saves it at once.
   */
  setupCard(input: SetupCardInput): Promise<SetupCardOutcome>;
  /** What became of a setup that waited for authentication: saved (its card), declined, or still waiting. */
  readSetup(input: { storeId: string; setupId: string }): Promise<SetupCardOutcome | null>;
  /** Charges a saved card without the buyer present (subscription, usage and renewal charges). */
  chargeSavedCard(input: ChargeSavedCardInput): Promise<ChargeOutcome>;
  /** Charges a card the buyer just typed (checkout), optionally keeping it. */
  chargeCard(input: ChargeCardInput): Promise<CheckoutChargeOutcome>;
  /** Creates a PIX payment: pending until the provider's notice (paid, or expired). */
  createPix(input: CreatePixInput): Promise<PixOutcome>;
  /**
   * Settles a pending transaction (review or PIX) the way the provider's notice would; idempotent
   * for the same outcome. The test connection's admin CLI and hosted-page buttons call it.
   */
  settle(input: { storeId: string; transactionId: string; outcome: SettlementStatus }): Promise<SettleResult>;
  /** Current state of a transaction (reconciliation; an overdue PIX reads as expired). */
  getTransaction(input: { storeId: string; transactionId: string }): Promise<TransactionInfo | null>;
  /** What became of the request under this key, asked before another attempt, an expiry, or while in review. */
  lookupCharge(input: { storeId: string; idempotencyKey: string }): Promise<ChargeLookup | null>;
  /**
   * Gives the money of the transaction charged under `chargeKey` back: voids it while pending, refunds
   * it once captured. Idempotent: asking again answers the same; a declined or refused charge has nothing to give back.
   */
  refundCharge(input: { storeId: string; chargeKey: string }): Promise<RefundResult>;
  /**
   * Closes an unattended charge the bank asked the buyer to confirm (`authentication_required`), so the buyer
   * can no longer confirm it: cancelled at the provider under its key's own step; `succeeded` when the buyer
   * confirmed it first (the money is there). A payment still on its way throws (unknown: asked again).
   * Connections without buyer authentication of saved cards leave it out (their charges never ask for it).
   */
  closeAuthentication?(input: { storeId: string; chargeKey: string; transactionId: string }): Promise<'closed' | 'succeeded'>;
  /**
   * Fences a pending payment (see CancelPendingResult): cancels the transaction charged under `chargeKey`
   * (named by `transactionId` when known; a `seti_` setup too) keyed `<chargeKey>#cancel`; idempotent. A PIX at
   * its expiry, a 3-D Secure the buyer never finished. Throws while unknown (nothing found under the key yet,
   * the provider unreachable): the caller asks again.
   */
  cancelPending(input: { storeId: string; chargeKey: string; transactionId?: string | null }): Promise<CancelPendingResult>;
  /** Refunds `amount` of a captured transaction under `refundKey` (whole or partial); a repeat answers the same. */
  refund(input: RefundInput): Promise<RefundOutcome>;
  /** The refund made under `refundKey`, as it is now; null when none reached the provider. Throws when it cannot tell. */
  lookupRefund(input: { storeId: string; transactionId: string; refundKey: string; chargeKey?: string | null }): Promise<RefundOutcome | null>;
}
