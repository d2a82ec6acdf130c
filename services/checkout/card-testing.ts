// Card testing bounded per offer and per store, not only per session and address: offer links open
// sessions on demand and addresses rotate, so declined cards are also counted per offer and per store.
// Past a bound the subject is slowed, not closed: one card attempt per interval gets through (a buyer
// told to wait a few seconds still pays), every other is answered "wait N seconds" without reaching
// the provider. PIX is never slowed (it cannot test cards).
import type { Database } from '../../store/database';
import { cardDeclinesInWindow, claimCardTurn, recordCardDecline } from '../../store/card-declines';
import { findCheckoutSession, type CheckoutSessionDoc } from '../../store/checkout-sessions';

/** The window declines are counted in: fixed, so the worker that counts them needs no setting. */
export const CARD_DECLINES_WINDOW_MS = 10 * 60_000;

export interface CardTestingLimits {
  /** Declined cards per offer per window before its card attempts are slowed. */
  perOffer: number;
  /** Declined cards per store (all its offers) per window before its card attempts are slowed. */
  perStore: number;
  /** While slowed: one card attempt per subject per this interval. */
  slowEveryMs: number;
}

export const DEFAULT_CARD_TESTING_LIMITS: CardTestingLimits = { perOffer: 10, perStore: 30, slowEveryMs: 20_000 };

/** CARD_DECLINES_PER_OFFER, CARD_DECLINES_PER_STORE, CARD_SLOWDOWN_EVERY_MS (positive integers), else the defaults. */
export function cardTestingLimitsFrom(env: NodeJS.ProcessEnv): CardTestingLimits {
  const read = (name: string, fallback: number) => {
    const value = Number(env[name] ?? '');
    return Number.isInteger(value) && value > 0 ? value : fallback;
  };
  const d = DEFAULT_CARD_TESTING_LIMITS;
  return {
    perOffer: read('CARD_DECLINES_PER_OFFER', d.perOffer),
    perStore: read('CARD_DECLINES_PER_STORE', d.perStore),
    slowEveryMs: read('CARD_SLOWDOWN_EVERY_MS', d.slowEveryMs),
  };
}

type Session = Pick<CheckoutSessionDoc, 'store_id' | 'offer'>;

const offerSubject = (session: Session) => `offer:${session.store_id}:${session.offer.id}`;
const storeSubject = (session: Session) => `store:${session.store_id}`;

/** Whether a card attempt may go to the provider now; if not, in how many seconds to try again. */
export async function admitCardAttempt(
  db: Database,
  limits: CardTestingLimits,
  session: Session,
  now = Date.now(),
): Promise<{ admitted: true } | { admitted: false; retryAfter: number }> {
  const bounds = [
    { subject: offerSubject(session), bound: limits.perOffer },
    { subject: storeSubject(session), bound: limits.perStore },
  ];
  for (const { subject, bound } of bounds) {
    if ((await cardDeclinesInWindow(db, subject, CARD_DECLINES_WINDOW_MS, now)) < bound) continue;
    const turn = await claimCardTurn(db, subject, limits.slowEveryMs, now);
    if (!turn.granted) return { admitted: false, retryAfter: Math.max(1, Math.ceil((turn.nextAt - now) / 1000)) };
  }
  return { admitted: true };
}

/** A declined card on the session (its workflow's decline activity): counted against its offer and store. */
export async function countCardDecline(db: Database, storeId: string, sessionId: string): Promise<void> {
  const session = await findCheckoutSession(db, storeId, sessionId);
  if (session) await recordCardDecline(db, [offerSubject(session), storeSubject(session)], CARD_DECLINES_WINDOW_MS);
}
