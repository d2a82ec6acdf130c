// What this tests: the pure rules of refunds (domain/refunds.ts): which refusal an order and an amount get
// (not refundable, over what remains, not a positive integer, the 100-refund bound), which event a counted
// refund emits, and the pending refund's backoff (doubling from a minute, capped at a day, bounded checks).
import { describe, expect, test } from 'vitest';
import {
  MAX_REFUNDS_PER_ORDER,
  PENDING_REFUND_CHECKS,
  PENDING_REFUND_MAX_CHECK_MS,
  pendingRefundWaitMs,
  refundableAmount,
  refundEventType,
  refundRefusal,
  type RefundableOrder,
} from '../../domain/refunds';

const paid: RefundableOrder = { status: 'paid', amount_total: 19_700, amount_refunded: 0, refunds: 0, has_transaction: true };

describe('refund refusals', () => {
  test('a paid order takes any amount up to its total; the rest by default', () => {
    expect(refundRefusal(paid, 1)).toBeNull();
    expect(refundRefusal(paid, 19_700)).toBeNull();
    expect(refundRefusal(paid, undefined)).toBeNull();
    expect(refundableAmount({ ...paid, amount_refunded: 5_000 })).toBe(14_700);
  });

  test('more than remains is refund_amount_too_large (param amount); a fully refunded order is not refundable', () => {
    expect(refundRefusal(paid, 19_701)).toMatchObject({ code: 'refund_amount_too_large', param: 'amount' });
    expect(refundRefusal({ ...paid, status: 'partially_refunded', amount_refunded: 5_000 }, 14_701)).toMatchObject({
      code: 'refund_amount_too_large',
    });
    expect(refundRefusal({ ...paid, status: 'refunded', amount_refunded: 19_700 }, 1)).toMatchObject({ code: 'order_not_refundable' });
  });

  test('an order not paid, charged back or without a payment at the provider is order_not_refundable', () => {
    for (const status of ['pending', 'failed', 'canceled', 'charged_back']) {
      expect(refundRefusal({ ...paid, status }, 100)).toMatchObject({ code: 'order_not_refundable', param: null });
    }
    expect(refundRefusal({ ...paid, has_transaction: false }, 100)).toMatchObject({ code: 'order_not_refundable' });
  });

  test('an amount that is not a positive integer is parameter_invalid', () => {
    for (const amount of [0, -5, 12.5, Number.NaN]) expect(refundRefusal(paid, amount)).toMatchObject({ code: 'parameter_invalid', param: 'amount' });
  });

  test(`the ${MAX_REFUNDS_PER_ORDER + 1}th refund of an order is refused (the bound of its refund list)`, () => {
    expect(refundRefusal({ ...paid, refunds: MAX_REFUNDS_PER_ORDER - 1 }, 1)).toBeNull();
    expect(refundRefusal({ ...paid, refunds: MAX_REFUNDS_PER_ORDER }, 1)).toMatchObject({ code: 'order_not_refundable' });
  });
});

test('the refund that completes the order emits order.refunded; any other order.partially_refunded', () => {
  expect(refundEventType(19_700, 19_700)).toBe('order.refunded');
  expect(refundEventType(5_000, 19_700)).toBe('order.partially_refunded');
});

test('a pending refund is asked again after 1 min, doubling, never more than a day apart, at most a bounded number of times', () => {
  expect(pendingRefundWaitMs(0)).toBe(60_000);
  expect(pendingRefundWaitMs(1)).toBe(120_000);
  expect(pendingRefundWaitMs(10)).toBe(1_024 * 60_000);
  expect(pendingRefundWaitMs(11)).toBe(PENDING_REFUND_MAX_CHECK_MS);
  expect(pendingRefundWaitMs(1_000)).toBe(PENDING_REFUND_MAX_CHECK_MS);
  const total = Array.from({ length: PENDING_REFUND_CHECKS }, (_, n) => pendingRefundWaitMs(n)).reduce((a, b) => a + b, 0);
  // About seven weeks in all: longer than a card refund's slowest bank, short of forever.
  expect(total / 86_400_000).toBeGreaterThan(40);
  expect(total / 86_400_000).toBeLessThan(60);
});
