// A checkout payment attempt at the provider, as the session workflow's activities run it: the charge
// (card by its provider token, PIX, or a trial's card saved), the provider asked by the attempt's key
// (what became of it, before an expiry, during a review), and an approval given back. Every call is
// under the attempt's key `checkout/<cs_id>/<n>`, so a retry never charges twice.
import type {
  CancelPendingResult,
  ChargeLookup,
  PaymentProvider,
  SetupCardOutcome,
  RefundResult,
  SavedCard,
  TransactionState,
} from '../../adapters/provider/types';
import { checkoutSessionWorkflowId, type AttemptResult, type PayInput, type PaymentAttemptOutcome } from '../../workflows/checkout-session/messages';

export interface ChargeAttemptInput extends Omit<PayInput, 'newBuyer'> {
  storeId: string;
  sessionId: string;
  /** The attempt's provider idempotency key. */
  key: string;
  /** The session's test clock: its attempts go only to the test connection (the activity picks it). */
  testClock?: string | null;
}

export interface LookupAttemptInput {
  storeId: string;
  sessionId: string;
  key: string;
  method: 'card' | 'pix';
  amount: number;
  currency: string;
  description: string | null;
  testClock?: string | null;
}

/** What the provider holds under an attempt's key: its first answer and the transaction's state now. */
export interface AttemptLookup {
  result: AttemptResult;
  state: TransactionState | null;
}

type Deps = { provider: PaymentProvider };

const savedCardRef = (card: SavedCard | null) =>
  card ? { id: card.paymentMethodId, brand: card.brand, last4: card.last4, chargeable: card.chargeable } : null;

/** One attempt at the provider under its key; a repeat returns the first answer. `signal`: the activity gave up, so does the request. */
export async function chargeCheckoutAttempt(deps: Deps, input: ChargeAttemptInput, signal?: AbortSignal): Promise<AttemptResult> {
  if (input.method === 'pix') return createPix(deps, { ...input, amount: input.amounts.amount_total, currency: input.amounts.currency }, signal);
  if (input.trial) return saveTrialCard(deps, input, signal);
  const charged = await deps.provider.chargeCard({
    storeId: input.storeId,
    idempotencyKey: input.key,
    cardToken: input.cardToken!,
    amount: input.amounts.amount_total,
    currency: input.amounts.currency,
    description: input.description,
    installments: input.installments,
    saveCard: input.saveCard,
    customerId: input.customerId,
    providerCustomerId: input.providerCustomerId,
    notifyRef: checkoutSessionWorkflowId(input.sessionId),
    signal,
  });
  // 3-D Secure: the buyer authenticates in the page; the client secret stays out of the workflow (the page reads it once).
  if (charged.status === 'action_required') return { outcome: { status: 'action_required', transactionId: charged.transactionId }, savedCard: null };
  return { outcome: cardOutcome(charged), savedCard: savedCardRef(charged.card) };
}

/** The installment plan the provider confirmed, carried to the order (never the plan the page asked for). */
const planOf = (charged: { installments?: number | null }) =>
  charged.installments && charged.installments > 1 ? { installments: charged.installments } : {};

function cardOutcome(charged: ChargeLookup['outcome']): PaymentAttemptOutcome {
  switch (charged.status) {
    case 'approved':
      return { status: 'approved', transactionId: charged.transactionId, ...planOf(charged) };
    case 'review':
      return { status: 'review', transactionId: charged.transactionId, ...planOf(charged) };
    case 'declined':
      return { status: 'declined', code: charged.code ?? 'declined', message: charged.message };
    case 'refused':
      return { status: 'declined', code: charged.code, message: charged.message };
  }
}

async function createPix(
  deps: Deps,
  input: { storeId: string; sessionId: string; key: string; amount: number; currency: string; description: string | null },
  signal?: AbortSignal,
): Promise<AttemptResult> {
  const pix = await deps.provider.createPix({
    storeId: input.storeId,
    idempotencyKey: input.key,
    amount: input.amount,
    currency: input.currency,
    description: input.description,
    notifyRef: checkoutSessionWorkflowId(input.sessionId),
    signal,
  });
  const outcome: PaymentAttemptOutcome =
    pix.status === 'pending'
      ? { status: 'pix_pending', transactionId: pix.transactionId, pixCode: pix.copyPaste, pixExpiresAt: pix.expiresAt }
      : { status: 'declined', code: pix.code, message: pix.message };
  return { outcome, savedCard: null };
}

/**
 * A trial charges nothing now: the card (by its token) is set up for off-session charges under the attempt's
 * key (Stripe: a SetupIntent), so the first renewal can charge it; a bank that asks for 3-D Secure first
 * makes the attempt wait for the buyer in the page, as a card payment does.
 */
async function saveTrialCard(deps: Deps, input: ChargeAttemptInput, signal?: AbortSignal): Promise<AttemptResult> {
  const setup = await deps.provider.setupCard({
    storeId: input.storeId,
    idempotencyKey: input.key,
    customerId: input.customerId,
    providerCustomerId: input.providerCustomerId,
    cardToken: input.cardToken!,
    notifyRef: checkoutSessionWorkflowId(input.sessionId),
    signal,
  });
  return setupResult(setup);
}

function setupResult(setup: SetupCardOutcome): AttemptResult {
  if (setup.status === 'saved') return { outcome: { status: 'approved', transactionId: null }, savedCard: savedCardRef(setup.card) };
  if (setup.status === 'action_required') return { outcome: { status: 'action_required', transactionId: setup.setupId }, savedCard: null };
  return { outcome: { status: 'declined', code: setup.code, message: setup.message }, savedCard: null };
}

/** A trial's setup after the buyer's 3-D Secure: its card once saved; thrown while the provider has no answer yet (retried). */
export async function readCheckoutSetup(deps: Deps, input: { storeId: string; setupId: string }): Promise<AttemptResult> {
  const setup = await deps.provider.readSetup({ storeId: input.storeId, setupId: input.setupId });
  if (!setup || setup.status === 'action_required') throw new Error(`the card setup ${input.setupId} is not settled yet`);
  return setupResult(setup);
}

/** What became of the attempt under its key; null when no request under it ever reached the provider. */
export async function lookupCheckoutAttempt(deps: Deps, input: LookupAttemptInput): Promise<AttemptLookup | null> {
  const found = await deps.provider.lookupCharge({ storeId: input.storeId, idempotencyKey: input.key });
  if (!found) return null;
  // A pending PIX's code is only in the provider's answer: asking again under the key returns it and creates nothing.
  if (input.method === 'pix' && found.state === 'pix_pending') return { result: await createPix(deps, input), state: found.state };
  if (input.method === 'pix' && found.outcome.status === 'review') {
    const transactionId = found.outcome.transactionId;
    const outcome: PaymentAttemptOutcome =
      found.state === 'paid'
        ? { status: 'approved', transactionId }
        : { status: 'declined', code: 'pix_not_paid', message: `The PIX is ${found.state}.` };
    return { result: { outcome, savedCard: null }, state: found.state };
  }
  if (found.state === 'action_required' && 'transactionId' in found.outcome && found.outcome.transactionId) {
    return { result: { outcome: { status: 'action_required', transactionId: found.outcome.transactionId }, savedCard: null }, state: found.state };
  }
  return { result: { outcome: cardOutcome(found.outcome), savedCard: savedCardRef(found.card) }, state: found.state };
}

/** Gives the attempt's money back: voided while pending, refunded once captured; asking again answers the same. */
export function refundCheckoutAttempt(deps: Deps, input: { storeId: string; key: string }): Promise<RefundResult> {
  return deps.provider.refundCharge({ storeId: input.storeId, chargeKey: input.key });
}

/** The fence of a pending attempt (a PIX at its expiry, a 3-D Secure left waiting): canceled at the provider under `<key>#cancel`, or found paid; unknown throws. */
export function cancelPendingAttempt(
  deps: Deps,
  input: { storeId: string; key: string; transactionId: string | null },
): Promise<CancelPendingResult> {
  return deps.provider.cancelPending({ storeId: input.storeId, chargeKey: input.key, transactionId: input.transactionId });
}
