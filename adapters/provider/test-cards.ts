// How the test connection's cards behave: the test numbers' table, card number checks and brands,
// and what a charge does with the buyer present or not. Pure: nothing here keeps a card number.
import type { ChargeOutcome } from './types';

/** How a test card behaves; derived once from its number, which is then forgotten. */
export type TestCardBehaviour =
  'approve' | 'decline_card_declined' | 'decline_insufficient_funds' | 'approve_present_only' | 'review' | 'not_chargeable_unattended';

export const TEST_CARDS: Record<string, TestCardBehaviour> = {
  '4242424242424242': 'approve',
  '4000000000000002': 'decline_card_declined',
  '4000000000009995': 'decline_insufficient_funds',
  '4000000000000341': 'approve_present_only',
  '4000000000004954': 'review',
  '4000002760003184': 'not_chargeable_unattended',
};

export function digitsOf(number: string): string {
  return number.replace(/[\s-]/g, '');
}

export function luhnValid(digits: string): boolean {
  if (!/^\d{12,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export function brandOf(digits: string): string {
  if (digits.startsWith('4')) return 'visa';
  const two = Number(digits.slice(0, 2));
  const four = Number(digits.slice(0, 4));
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'mastercard';
  if (two === 34 || two === 37) return 'amex';
  if (digits.startsWith('6011') || digits.startsWith('65')) return 'discover';
  if (digits.startsWith('636368') || digits.startsWith('438935') || digits.startsWith('504175')) return 'elo';
  return 'unknown';
}

/** Known test numbers behave per the table; any other valid number is approved like 4242. */
export function behaviourOf(digits: string): TestCardBehaviour {
  return TEST_CARDS[digits] ?? 'approve';
}

const DECLINE_MESSAGES: Record<string, string> = {
  card_declined: 'The card was declined.',
  insufficient_funds: 'The card has insufficient funds.',
};

export type CardDecision = 'approved' | 'review' | { declined: string } | 'not_chargeable';

/** What a card does when charged, with the buyer present (checkout) or not (saved card). */
export function cardDecision(behaviour: TestCardBehaviour, buyerPresent: boolean): CardDecision {
  switch (behaviour) {
    case 'approve':
      return 'approved';
    case 'decline_card_declined':
      return { declined: 'card_declined' };
    case 'decline_insufficient_funds':
      return { declined: 'insufficient_funds' };
    case 'approve_present_only':
      return buyerPresent ? 'approved' : { declined: 'card_declined' };
    case 'review':
      return 'review';
    case 'not_chargeable_unattended':
      return buyerPresent ? 'approved' : 'not_chargeable';
  }
}

export function outcomeFor(decision: CardDecision, transactionId: string): ChargeOutcome {
  if (decision === 'approved') return { status: 'approved', transactionId };
  if (decision === 'review') return { status: 'review', transactionId };
  if (decision === 'not_chargeable') {
    return {
      status: 'refused',
      transactionId: null,
      code: 'payment_method_not_chargeable',
      message: 'The provider holding this card does not accept charges without the customer present.',
    };
  }
  return { status: 'declined', transactionId, code: decision.declined, message: DECLINE_MESSAGES[decision.declined] ?? 'The card was declined.' };
}
