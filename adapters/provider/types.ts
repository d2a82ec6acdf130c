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
 *  - approved: money captured.
 *  - review: left pending until the provider's notice settles it (paid or refused).
 *  - declined: the card was tried and refused; `code` is the provider's decline code (null when it
 *    reported none, shown as `declined`). The provider recorded a transaction.
 *  - refused: the request was refused before the card was tried (no transaction): `provider_error`
 *    (e.g. amount 424242 on the test connection) or `payment_method_not_chargeable`.
 */
export type ChargeOutcome =
  | { status: 'approved'; transactionId: string }
  | { status: 'review'; transactionId: string }
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

export type TransactionState = 'approved' | 'review' | 'declined' | 'pix_pending' | 'paid' | 'refused' | 'expired' | 'voided' | 'refunded';

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

/** Money given back: a pending transaction voided (never captured) or a captured one refunded. */
export type RefundResult = { ok: true; status: 'voided' | 'refunded'; transactionId: string } | { ok: false; reason: string };

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
}
