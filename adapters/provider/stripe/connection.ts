// The Stripe connection (R3 2/7): the provider interface over the official `stripe` package. Every
// money request is a PaymentIntent created and confirmed in one call under the charge's key (Stripe's
// Idempotency-Key, scoped by store, and metadata.charge_key), on the store's connected account when it has
// one. Card numbers never reach it: the page's Stripe.js makes the pm_ id (PCI SAQ A). A timeout, a
// lost connection or a 5xx throws (unknown: the activity asks again under the same key); a request Stripe
// refused before any card was tried is `refused`; a card Stripe declined is `declined` with its decline code.
import Stripe from 'stripe';
import { stripeMaxCharge } from '../../../domain/charge-bounds';
import type {
  ChargeCardInput,
  ChargeLookup,
  ChargeOutcome,
  ChargeSavedCardInput,
  CheckoutChargeOutcome,
  CreatePixInput,
  PaymentProvider,
  PixOutcome,
  RefundResult,
  RegisterCustomerInput,
  RegisterCustomerResult,
  SaveCardResult,
  TransactionInfo,
} from '../types';
import { ConnectedAccounts, platformOnly, type StripeAccountResolver } from './accounts';
import { createStripeClient, withSignal } from './client';
import type { StripeConfig } from './config';
import { isRefusal, requestOptions, stripeIdempotencyKey, type StripeContext } from './context';
import { cardOf, cardOutcomeOf, declineCodeOf, lookupOf, savedCardOf, transactionOf, type IntentMetadata } from './intents';
import { findIntentByKey } from './lookup';

export interface StripeConnectionOptions {
  config: Pick<StripeConfig, 'secretKey' | 'apiUrl' | 'livemode'>;
  /** The store's connected account (acct_…); without it every call is on the platform account. */
  accountOf?: StripeAccountResolver;
  /** A client of one's own (tests); by default one against config.apiUrl. */
  client?: Stripe;
}

/** A PIX code is valid this long (the test connection's 30 minutes). */
export const PIX_EXPIRES_AFTER_SECONDS = 30 * 60;

export function createStripeConnection(options: StripeConnectionOptions): PaymentProvider {
  const ctx: StripeContext = {
    stripe: options.client ?? createStripeClient(options.config),
    accounts: new ConnectedAccounts(options.accountOf ?? platformOnly),
  };
  return {
    livemode: options.config.livemode,
    maxChargeAmount: stripeMaxCharge,
    registerCustomer: (input) => registerCustomer(ctx, input),
    tokenizeCard: async () => CARD_FIELDS_ONLY,
    saveCard: (input) => saveCard(ctx, input),
    chargeSavedCard: (input) => withSignal(input.signal, () => chargeSavedCard(ctx, input)),
    chargeCard: (input) => withSignal(input.signal, () => chargeCard(ctx, input)),
    createPix: (input) => withSignal(input.signal, () => createPix(ctx, input)),
    // Stripe settles payments itself and tells us by its events; only the test connection's buttons settle.
    settle: async () => ({ ok: false, reason: 'Stripe settles payments itself: its events arrive at POST /providers/stripe/events' }),
    getTransaction: (input) => getTransaction(ctx, input),
    lookupCharge: (input) => lookupCharge(ctx, input),
    refundCharge: (input) => refundCharge(ctx, input),
  };
}

const CARD_FIELDS_ONLY = {
  ok: false as const,
  code: 'card_fields_required',
  message: 'The Stripe connection takes cards only from Stripe.js in the page (a pm_ payment method); card numbers never reach the server.',
};

function metadataOf(
  input: { storeId: string; idempotencyKey: string; notifyRef?: string | null; customerId?: string | null },
  kind: IntentMetadata['kind'],
): Record<string, string> {
  const metadata: Record<string, string> = { charge_key: input.idempotencyKey, store_id: input.storeId, kind };
  if (input.notifyRef) metadata.notify_ref = input.notifyRef;
  if (input.customerId) metadata.customer_id = input.customerId;
  return metadata;
}

// ---- customers -------------------------------------------------------------------------------

/** CPF and CNPJ as Stripe's br_cpf / br_cnpj tax ids (in their documented punctuation); other documents are not sent. */
export function taxIdOf(document: RegisterCustomerInput['document']): Stripe.CustomerCreateParams.TaxIdDatum[] | undefined {
  const digits = document?.number.replace(/\D/g, '') ?? '';
  if (document?.type === 'cpf' && digits.length === 11) {
    return [{ type: 'br_cpf', value: digits.replace(/^(\d{3})(\d{3})(\d{3})(\d{2})$/, '$1.$2.$3-$4') }];
  }
  if (document?.type === 'cnpj' && digits.length === 14) {
    return [{ type: 'br_cnpj', value: digits.replace(/^(\d{2})(\d{3})(\d{3})(\d{4})(\d{2})$/, '$1.$2.$3/$4-$5') }];
  }
  return undefined;
}

async function registerCustomer(ctx: StripeContext, input: RegisterCustomerInput): Promise<RegisterCustomerResult> {
  const params: Stripe.CustomerCreateParams = {
    email: input.email,
    ...(input.name ? { name: input.name } : {}),
    ...(input.phone ? { phone: input.phone } : {}),
    ...(taxIdOf(input.document) ? { tax_id_data: taxIdOf(input.document) } : {}),
    metadata: { store_id: input.storeId, customer_id: input.customerId },
  };
  try {
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, `customer/${input.customerId}`));
    const customer = await ctx.stripe.customers.create(params, options);
    return { ok: true, providerCustomerId: customer.id };
  } catch (error) {
    if (isRefusal(error)) return { ok: false, reason: error.message };
    throw error;
  }
}

// ---- saved cards -------------------------------------------------------------------------------

type SaveCardInput = Parameters<PaymentProvider['saveCard']>[0];

/** Attaches Stripe.js's payment method to the customer and makes it the customer's default for later charges. */
async function saveCard(ctx: StripeContext, input: SaveCardInput): Promise<SaveCardResult> {
  if (!('cardToken' in input)) return CARD_FIELDS_ONLY;
  const customer = input.providerCustomerId;
  if (!customer) return { ok: false, code: 'customer_required', message: 'A card is saved on a Stripe customer: the buyer has none.' };
  const key = `save-card/${customer}/${input.cardToken}`;
  try {
    const attachOptions = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, key));
    const method = await ctx.stripe.paymentMethods.attach(input.cardToken, { customer }, attachOptions);
    const defaultOptions = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, key, 'default'));
    await ctx.stripe.customers.update(customer, { invoice_settings: { default_payment_method: method.id } }, defaultOptions);
    return { ok: true, card: cardOf(method) };
  } catch (error) {
    if (error instanceof Stripe.errors.StripeCardError) return { ok: false, code: declineCodeOf(error) ?? 'card_declined', message: error.message };
    if (isRefusal(error)) return { ok: false, code: error.code || 'provider_error', message: error.message };
    throw error;
  }
}

// ---- charges -----------------------------------------------------------------------------------

/** A declined confirm (card error) is an answer with a transaction; a refused request has none; the rest is unknown. */
function failedChargeOutcome(error: unknown): ChargeOutcome {
  if (error instanceof Stripe.errors.StripeError && error.payment_intent && (error instanceof Stripe.errors.StripeCardError || isRefusal(error))) {
    return { status: 'declined', transactionId: error.payment_intent.id, code: declineCodeOf(error), message: error.message };
  }
  if (isRefusal(error))
    return { status: 'refused', transactionId: null, code: 'provider_error', message: `Stripe refused the request: ${error.message}` };
  throw error;
}

/** An unattended charge of a saved card: off_session, so a card that asks for authentication is a decline. */
async function chargeSavedCard(ctx: StripeContext, input: ChargeSavedCardInput): Promise<ChargeOutcome> {
  try {
    const method = await ctx.stripe.paymentMethods.retrieve(input.paymentMethodId, {}, await requestOptions(ctx, input.storeId));
    if (!method.customer) {
      return {
        status: 'refused',
        transactionId: null,
        code: 'payment_method_not_chargeable',
        message: 'The card is not saved on a Stripe customer.',
      };
    }
    const params: Stripe.PaymentIntentCreateParams = {
      amount: input.amount,
      currency: input.currency,
      customer: typeof method.customer === 'string' ? method.customer : method.customer.id,
      payment_method: method.id,
      allowed_payment_method_types: ['card'],
      off_session: true,
      confirm: true,
      ...(input.description ? { description: input.description } : {}),
      metadata: metadataOf(input, 'saved_card'),
    };
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.idempotencyKey));
    return cardOutcomeOf(await ctx.stripe.paymentIntents.create(params, options));
  } catch (error) {
    return failedChargeOutcome(error);
  }
}

/** Installments through Stripe's card installment plans, for BRL only. */
function installmentOptions(input: ChargeCardInput): Stripe.PaymentIntentCreateParams.PaymentMethodOptions | undefined {
  if (!input.installments || input.installments < 2 || input.currency.toLowerCase() !== 'brl') return undefined;
  return { card: { installments: { enabled: true, plan: { count: input.installments, interval: 'month', type: 'fixed_count' } } } };
}

/** The buyer present: Stripe.js's pm_ confirmed now; 3-D Secure answers action_required with the page's client secret. */
async function chargeCard(ctx: StripeContext, input: ChargeCardInput): Promise<CheckoutChargeOutcome> {
  const customer = input.providerCustomerId ?? undefined;
  const keep = Boolean(input.saveCard && customer);
  const methodOptions = installmentOptions(input);
  const params: Stripe.PaymentIntentCreateParams = {
    amount: input.amount,
    currency: input.currency,
    payment_method: input.cardToken,
    allowed_payment_method_types: ['card'],
    confirm: true,
    // Stripe.js finishes a 3-D Secure challenge in the page (handleNextAction) instead of a redirect.
    use_stripe_sdk: true,
    ...(customer ? { customer } : {}),
    ...(keep ? { setup_future_usage: 'off_session' as const } : {}),
    ...(methodOptions ? { payment_method_options: methodOptions } : {}),
    ...(input.description ? { description: input.description } : {}),
    metadata: metadataOf(input, 'card'),
    expand: ['payment_method'],
  };
  let intent: Stripe.PaymentIntent;
  try {
    intent = await ctx.stripe.paymentIntents.create(
      params,
      await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.idempotencyKey)),
    );
  } catch (error) {
    return { ...failedChargeOutcome(error), card: null };
  }
  if (intent.status === 'requires_action' && intent.client_secret) {
    return { status: 'action_required', transactionId: intent.id, clientSecret: intent.client_secret, card: null };
  }
  const card = keep ? savedCardOf(intent) : null;
  if (card && customer) await makeDefaultCard(ctx, input, customer, card.paymentMethodId);
  return { ...cardOutcomeOf(intent), card };
}

/** The kept card becomes the customer's default (what renewals charge), keyed by the charge. */
async function makeDefaultCard(ctx: StripeContext, input: ChargeCardInput, customer: string, paymentMethodId: string): Promise<void> {
  const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.idempotencyKey, 'default-card'));
  await ctx.stripe.customers.update(customer, { invoice_settings: { default_payment_method: paymentMethodId } }, options);
}

/** A PIX PaymentIntent: its QR code and copy-paste code from next_action, paid later (a provider event). */
async function createPix(ctx: StripeContext, input: CreatePixInput): Promise<PixOutcome> {
  const params: Stripe.PaymentIntentCreateParams = {
    amount: input.amount,
    currency: input.currency,
    allowed_payment_method_types: ['pix'],
    payment_method_data: { type: 'pix' },
    payment_method_options: { pix: { expires_after_seconds: PIX_EXPIRES_AFTER_SECONDS } },
    confirm: true,
    ...(input.description ? { description: input.description } : {}),
    metadata: metadataOf(input, 'pix'),
  };
  let intent: Stripe.PaymentIntent;
  try {
    intent = await ctx.stripe.paymentIntents.create(
      params,
      await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.idempotencyKey)),
    );
  } catch (error) {
    if (isRefusal(error))
      return { status: 'refused', transactionId: null, code: 'provider_error', message: `Stripe refused the PIX: ${error.message}` };
    throw error;
  }
  const qr = intent.next_action?.pix_display_qr_code;
  // Never read as refused: the intent exists; asking again under the key answers it.
  if (!qr?.data || !qr.expires_at) throw new Error(`Stripe answered PIX ${intent.id} (${intent.status}) without its QR code`);
  return { status: 'pending', transactionId: intent.id, copyPaste: qr.data, expiresAt: qr.expires_at, qrImageUrl: qr.image_url_png ?? null };
}

// ---- reading and giving back ------------------------------------------------------------------

async function lookupCharge(ctx: StripeContext, input: { storeId: string; idempotencyKey: string }): Promise<ChargeLookup | null> {
  const intent = await findIntentByKey(ctx, input.storeId, input.idempotencyKey);
  return intent ? lookupOf(intent, input.idempotencyKey) : null;
}

/** Another store's (or an unknown) intent reads as none. */
async function getTransaction(ctx: StripeContext, input: { storeId: string; transactionId: string }): Promise<TransactionInfo | null> {
  try {
    const options = await requestOptions(ctx, input.storeId);
    const intent = await ctx.stripe.paymentIntents.retrieve(input.transactionId, { expand: ['latest_charge'] }, options);
    return intent.metadata?.store_id === input.storeId ? transactionOf(intent, input.storeId) : null;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
    throw error;
  }
}

/** Voids (cancels) a pending intent, refunds a captured one; both keyed, so asking again answers the same. */
async function refundCharge(ctx: StripeContext, input: { storeId: string; chargeKey: string }): Promise<RefundResult> {
  const intent = await findIntentByKey(ctx, input.storeId, input.chargeKey);
  if (!intent) return { ok: false, reason: `nothing was charged under ${input.chargeKey}` };
  const state = lookupOf(intent, input.chargeKey).state;
  if (state === 'voided' || state === 'refunded') return { ok: true, status: state, transactionId: intent.id };
  if (intent.status === 'requires_capture' || intent.status === 'requires_action' || intent.status === 'requires_confirmation') {
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.chargeKey, 'cancel'));
    await ctx.stripe.paymentIntents.cancel(intent.id, { cancellation_reason: 'abandoned' }, options);
    return { ok: true, status: 'voided', transactionId: intent.id };
  }
  if (intent.status === 'succeeded') {
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.chargeKey, 'refund'));
    await ctx.stripe.refunds.create({ payment_intent: intent.id, metadata: { charge_key: input.chargeKey, store_id: input.storeId } }, options);
    return { ok: true, status: 'refunded', transactionId: intent.id };
  }
  return { ok: false, reason: `transaction ${intent.id} is ${intent.status}: nothing to give back now` };
}
