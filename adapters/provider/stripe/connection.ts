// The Stripe connection (R3 2/7): the provider interface over the official `stripe` package. Every
// money request is a PaymentIntent created and confirmed in one call under the charge's key (Stripe's
// Idempotency-Key, scoped by store, and metadata.charge_key), on the store's connected account when it has
// one. Card numbers never reach it: the page's Stripe.js makes the pm_ id (PCI SAQ A). A timeout, a
// lost connection or a 5xx throws (unknown: the activity asks again under the same key); a request Stripe
// refused before any card was tried is `refused`; a card Stripe declined is `declined` with its decline code.
import Stripe from 'stripe';
import { stripeMaxCharge } from '../../../domain/charge-bounds';
import type {
  CancelPendingResult,
  ChargeCardInput,
  ChargeLookup,
  ChargeOutcome,
  ChargeSavedCardInput,
  CheckoutChargeOutcome,
  CreatePixInput,
  PaymentProvider,
  PixOutcome,
  RefundResult,
  SetupCardInput,
  SetupCardOutcome,
  RegisterCustomerInput,
  RegisterCustomerResult,
  SaveCardResult,
  TransactionInfo,
} from '../types';
import { ConnectedAccounts, platformOnly, type ChargeAccountPins, type StripeAccountResolver } from './accounts';
import { createStripeClient, withSignal } from './client';
import type { StripeConfig } from './config';
import { isRefusal, requestOptions, stripeIdempotencyKey, underChargeAccount, type StripeContext } from './context';
import { cardOf, cardOutcomeOf, declineCodeOf, lookupOf, savedCardOf, settledAtOf, transactionOf, type IntentMetadata } from './intents';
import { findIntentByKey } from './lookup';
import { createRefund, findRefundByKey } from './refunds';

export interface StripeConnectionOptions {
  config: Pick<StripeConfig, 'secretKey' | 'apiUrl' | 'livemode'>;
  /** The store's connected account (acct_…); without it every call is on the platform account. */
  accountOf?: StripeAccountResolver;
  /** Where each charge key's account is pinned before its first request; without it a key follows the store's account of the moment. */
  chargeAccounts?: ChargeAccountPins;
  /** A client of one's own (tests); by default one against config.apiUrl. */
  client?: Stripe;
}

/** A PIX code is valid this long (the test connection's 30 minutes). */
export const PIX_EXPIRES_AFTER_SECONDS = 30 * 60;

export function createStripeConnection(options: StripeConnectionOptions): PaymentProvider {
  const ctx: StripeContext = {
    stripe: options.client ?? createStripeClient(options.config),
    accounts: new ConnectedAccounts(options.accountOf ?? platformOnly),
    pins: options.chargeAccounts,
  };
  // Requests that may create the key's payment pin its account first; the rest ask under the pin.
  const charging = <T>(input: { storeId: string; idempotencyKey: string }, call: () => Promise<T>) =>
    underChargeAccount(ctx, { storeId: input.storeId, chargeKey: input.idempotencyKey, pinFirst: true }, call);
  const asking = <T>(storeId: string, chargeKey: string, call: () => Promise<T>) =>
    underChargeAccount(ctx, { storeId, chargeKey, pinFirst: false }, call);
  const underPaymentAccount = <T>(input: { storeId: string; chargeKey?: string | null }, call: () => Promise<T>) =>
    input.chargeKey ? asking(input.storeId, input.chargeKey, call) : call();
  return {
    livemode: options.config.livemode,
    installmentsAvailable: stripeInstallmentsAvailable,
    maxChargeAmount: stripeMaxCharge,
    registerCustomer: (input) => registerCustomer(ctx, input),
    tokenizeCard: async () => CARD_FIELDS_ONLY,
    saveCard: (input) => saveCard(ctx, input),
    setupCard: (input) => withSignal(input.signal, () => charging(input, () => setupCard(ctx, input))),
    readSetup: (input) => readSetup(ctx, input),
    chargeSavedCard: (input) => withSignal(input.signal, () => charging(input, () => chargeSavedCard(ctx, input))),
    chargeCard: (input) => withSignal(input.signal, () => charging(input, () => chargeCard(ctx, input))),
    createPix: (input) => withSignal(input.signal, () => charging(input, () => createPix(ctx, input))),
    // Stripe settles payments itself and tells us by its events; only the test connection's buttons settle.
    settle: async () => ({ ok: false, reason: 'Stripe settles payments itself: its events arrive at POST /providers/stripe/events' }),
    getTransaction: (input) => getTransaction(ctx, input),
    lookupCharge: (input) => asking(input.storeId, input.idempotencyKey, () => lookupCharge(ctx, input)),
    refundCharge: (input) => asking(input.storeId, input.chargeKey, () => refundCharge(ctx, input)),
    closeAuthentication: (input) => asking(input.storeId, input.chargeKey, () => closeAuthentication(ctx, input)),
    cancelPending: (input) => asking(input.storeId, input.chargeKey, () => cancelPending(ctx, input)),
    // A refund goes where its payment was made: the charge key's pinned account (else the store's, as before pins).
    refund: (input) => withSignal(input.signal, () => underPaymentAccount(input, () => createRefund(ctx, input))),
    lookupRefund: (input) => underPaymentAccount(input, () => findRefundByKey(ctx, input)),
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

/**
 * A free trial's card: a SetupIntent confirmed now for off-session use (Stripe.js finishes a 3-D Secure in
 * the page), keyed by the attempt; once succeeded its card is the customer's default. Unknown answers throw.
 */
async function setupCard(ctx: StripeContext, input: SetupCardInput): Promise<SetupCardOutcome> {
  const customer = input.providerCustomerId;
  if (!customer) return { status: 'declined', code: 'customer_required', message: 'A card is saved on a Stripe customer: the buyer has none.' };
  const params: Stripe.SetupIntentCreateParams = {
    customer,
    payment_method: input.cardToken,
    allowed_payment_method_types: ['card'],
    usage: 'off_session',
    confirm: true,
    use_stripe_sdk: true,
    metadata: {
      charge_key: input.idempotencyKey,
      store_id: input.storeId,
      kind: 'setup',
      ...(input.notifyRef ? { notify_ref: input.notifyRef } : {}),
      ...(input.customerId ? { customer_id: input.customerId } : {}),
    },
    expand: ['payment_method'],
  };
  let setup: Stripe.SetupIntent;
  try {
    setup = await ctx.stripe.setupIntents.create(
      params,
      await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.idempotencyKey)),
    );
  } catch (error) {
    if (error instanceof Stripe.errors.StripeCardError)
      return { status: 'declined', code: declineCodeOf(error) ?? 'card_declined', message: error.message };
    if (isRefusal(error)) return { status: 'declined', code: 'provider_error', message: `Stripe refused the card setup: ${error.message}` };
    throw error;
  }
  return setupOutcome(ctx, input.storeId, input.idempotencyKey, setup);
}

/** A SetupIntent read as a setup outcome; a succeeded one's card becomes the customer's default (keyed). */
async function setupOutcome(ctx: StripeContext, storeId: string, key: string, setup: Stripe.SetupIntent): Promise<SetupCardOutcome> {
  if (setup.status === 'requires_action' && setup.client_secret)
    return { status: 'action_required', setupId: setup.id, clientSecret: setup.client_secret };
  const method = setup.payment_method;
  if (setup.status === 'succeeded' && method && typeof method === 'object') {
    const customer = typeof setup.customer === 'string' ? setup.customer : setup.customer?.id;
    if (customer) {
      const options = await requestOptions(ctx, storeId, stripeIdempotencyKey(storeId, key, 'default-card'));
      await ctx.stripe.customers.update(customer, { invoice_settings: { default_payment_method: method.id } }, options);
    }
    return { status: 'saved', card: cardOf(method) };
  }
  if (setup.status === 'succeeded') throw new Error(`SetupIntent ${setup.id} answered without its payment method`);
  const failure = setup.last_setup_error;
  return {
    status: 'declined',
    code: failure?.decline_code || failure?.code || 'setup_intent_authentication_failure',
    message: failure?.message ?? `The card setup is ${setup.status}.`,
  };
}

/** What became of a SetupIntent that waited for the buyer; another store's reads as none. */
async function readSetup(ctx: StripeContext, input: { storeId: string; setupId: string }): Promise<SetupCardOutcome | null> {
  const setup = await retrieveSetup(ctx, input.storeId, input.setupId);
  if (!setup) return null;
  if (setup.status === 'requires_action') return { status: 'action_required', setupId: setup.id, clientSecret: '' };
  return setupOutcome(ctx, input.storeId, setup.metadata?.charge_key ?? setup.id, setup);
}

async function retrieveSetup(ctx: StripeContext, storeId: string, setupId: string): Promise<Stripe.SetupIntent | null> {
  try {
    const setup = await ctx.stripe.setupIntents.retrieve(setupId, { expand: ['payment_method'] }, await requestOptions(ctx, storeId));
    return setup.metadata?.store_id === storeId ? setup : null;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
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

/** Stripe's card installment plans are for Brazilian cards in BRL (its Brazil installments; Mexico's are not offered here). */
export const stripeInstallmentsAvailable = (currency: string): boolean => currency.toLowerCase() === 'brl';

/** Installments through Stripe's card installment plans, for BRL only (the page refuses them elsewhere, never charging in full silently). */
function installmentOptions(input: ChargeCardInput): Stripe.PaymentIntentCreateParams.PaymentMethodOptions | undefined {
  if (!input.installments || input.installments < 2 || !stripeInstallmentsAvailable(input.currency)) return undefined;
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
  if (input.transactionId.startsWith('seti_')) return setupTransaction(ctx, input.storeId, input.transactionId);
  try {
    const options = await requestOptions(ctx, input.storeId);
    const intent = await ctx.stripe.paymentIntents.retrieve(input.transactionId, { expand: ['latest_charge'] }, options);
    return intent.metadata?.store_id === input.storeId ? transactionOf(intent, input.storeId) : null;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
    throw error;
  }
}

/** A trial's SetupIntent as a transaction (the page's confirm re-check reads it like an intent); nothing is charged. */
async function setupTransaction(ctx: StripeContext, storeId: string, setupId: string): Promise<TransactionInfo | null> {
  const setup = await retrieveSetup(ctx, storeId, setupId);
  if (!setup) return null;
  const failed = setup.status === 'requires_payment_method' || setup.status === 'canceled';
  const state = setup.status === 'succeeded' ? 'approved' : failed ? 'declined' : 'action_required';
  return {
    transactionId: setup.id,
    storeId,
    idempotencyKey: setup.metadata?.charge_key ?? '',
    kind: 'card',
    state,
    amount: 0,
    currency: '',
    notifyRef: setup.metadata?.notify_ref ?? null,
    code: failed ? setup.last_setup_error?.code || 'setup_intent_authentication_failure' : null,
    message: setup.last_setup_error?.message ?? null,
    settledAt: state === 'action_required' ? null : setup.created,
  };
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

/** The intent of this store by id, or null (another store's, or unknown). */
async function ownIntent(ctx: StripeContext, storeId: string, transactionId: string): Promise<Stripe.PaymentIntent | null> {
  try {
    const intent = await ctx.stripe.paymentIntents.retrieve(transactionId, {}, await requestOptions(ctx, storeId));
    return intent.metadata?.store_id === storeId ? intent : null;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return null;
    throw error;
  }
}

/** Intents a cancel still stops: the buyer has not (or not successfully) authenticated, nothing is captured. */
const CANCELLABLE: Stripe.PaymentIntent.Status[] = ['requires_action', 'requires_payment_method', 'requires_confirmation', 'requires_capture'];

/**
 * The fence of a pending 3-D Secure at the session's end: cancelled at Stripe under `<key>#cancel`, unless
 * it succeeded first. Not found yet (search lags) or still processing: thrown, asked again under the key.
 */
async function cancelPending(
  ctx: StripeContext,
  input: { storeId: string; chargeKey: string; transactionId?: string | null },
): Promise<CancelPendingResult> {
  if (input.transactionId?.startsWith('seti_')) return cancelSetup(ctx, input.storeId, input.chargeKey, input.transactionId);
  const found = input.transactionId ? null : await findIntentByKey(ctx, input.storeId, input.chargeKey);
  // Search lags writes: not found yet is unknown, never "nothing to cancel".
  if (!input.transactionId && !found) throw new Error(`no PaymentIntent found under ${input.chargeKey} yet`);
  // Already decided: answered as it stands, no cancel sent.
  if (found && (found.status === 'succeeded' || found.status === 'canceled')) return fenceOf(found);
  if (found && !CANCELLABLE.includes(found.status)) throw new Error(`PaymentIntent ${found.id} is ${found.status}: asked again later`);
  const id = input.transactionId ?? found!.id;
  const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.chargeKey, 'cancel'));
  try {
    return fenceOf(await ctx.stripe.paymentIntents.cancel(id, { cancellation_reason: 'abandoned' }, options));
  } catch (error) {
    // Refused because it moved meanwhile (the buyer paid or authenticated in the last second): what it is now decides.
    if (!isRefusal(error)) throw error;
    const intent = await ctx.stripe.paymentIntents.retrieve(id, { expand: ['latest_charge'] }, await requestOptions(ctx, input.storeId));
    if (intent.metadata?.store_id !== input.storeId) throw new Error(`PaymentIntent ${id} is not this store's`, { cause: error });
    return fenceOf(intent);
  }
}

/** The fence's answer from the intent as Stripe holds it (after the cancel, or its refusal); anything else is unknown. */
function fenceOf(intent: Stripe.PaymentIntent): CancelPendingResult {
  if (intent.status === 'canceled') return { status: 'canceled', transactionId: intent.id };
  if (intent.status === 'succeeded') {
    return { status: 'succeeded', transactionId: intent.id, amount: intent.amount, currency: intent.currency, settledAt: settledAtOf(intent) };
  }
  throw new Error(`PaymentIntent ${intent.id} is ${intent.status}: neither canceled nor succeeded yet`);
}

/** Stripe's states from which the buyer could still confirm the intent (the off-session decline leaves requires_payment_method). */
const CONFIRMABLE: readonly Stripe.PaymentIntent.Status[] = ['requires_payment_method', 'requires_confirmation', 'requires_action'];

/**
 * Fences a renewal the bank asked the buyer to confirm: cancelled (keyed `#close-authentication`) unless it
 * succeeded; a cancel that loses the race to the buyer's confirmation reads the intent again and finds it paid.
 */
async function closeAuthentication(
  ctx: StripeContext,
  input: { storeId: string; chargeKey: string; transactionId: string },
): Promise<'closed' | 'succeeded'> {
  const intent = await ownIntent(ctx, input.storeId, input.transactionId);
  if (!intent || intent.status === 'canceled') return 'closed';
  if (intent.status === 'succeeded') return 'succeeded';
  if (!CONFIRMABLE.includes(intent.status)) throw new Error(`payment ${intent.id} is ${intent.status}: its outcome is not known yet`);
  try {
    const options = await requestOptions(ctx, input.storeId, stripeIdempotencyKey(input.storeId, input.chargeKey, 'close-authentication'));
    const canceled = await ctx.stripe.paymentIntents.cancel(intent.id, { cancellation_reason: 'abandoned' }, options);
    if (canceled.status === 'canceled') return 'closed';
  } catch (error) {
    if (!(error instanceof Stripe.errors.StripeInvalidRequestError)) throw error;
  }
  const now = await ownIntent(ctx, input.storeId, input.transactionId);
  if (now?.status === 'succeeded') return 'succeeded';
  if (!now || now.status === 'canceled') return 'closed';
  throw new Error(`payment ${intent.id} is ${now.status} after its cancel: asked again`);
}

/** A setup's fence: nothing is charged either way, so a succeeded one answers with no amount. */
function setupFenceOf(setup: Stripe.SetupIntent): CancelPendingResult | null {
  if (setup.status === 'canceled') return { status: 'canceled', transactionId: setup.id };
  if (setup.status === 'succeeded') return { status: 'succeeded', transactionId: setup.id, amount: 0, currency: '', settledAt: null };
  return null;
}

/** A trial's setup left waiting: cancelled keyed (nothing was charged either way); one that succeeded first answers succeeded. */
async function cancelSetup(ctx: StripeContext, storeId: string, key: string, setupId: string): Promise<CancelPendingResult> {
  const setup = await retrieveSetup(ctx, storeId, setupId);
  if (!setup) throw new Error(`no SetupIntent ${setupId} for store ${storeId}`);
  const decided = setupFenceOf(setup);
  if (decided) return decided;
  const options = await requestOptions(ctx, storeId, stripeIdempotencyKey(storeId, key, 'cancel'));
  try {
    await ctx.stripe.setupIntents.cancel(setup.id, { cancellation_reason: 'abandoned' }, options);
    return { status: 'canceled', transactionId: setup.id };
  } catch (error) {
    if (!isRefusal(error)) throw error;
    const now = await retrieveSetup(ctx, storeId, setupId);
    const after = now && setupFenceOf(now);
    if (after) return after;
    throw error;
  }
}
