// What this tests: an order's installments are the plan the provider confirmed. Stripe's answer is read
// (the charge's payment_method_details, else the intent's selected plan; none: paid in full), and a
// renewal, charged off session in full, says 1 whatever plan the first purchase had (docs/stripe.md).
import { describe, expect, it } from 'vitest';
import type Stripe from 'stripe';
import { confirmedInstallments } from '../../adapters/provider/stripe/intents';
import { renewalOrderDoc } from '../../services/subscriptions/life';
import type { SubscriptionDoc } from '../../store/subscriptions';

const intent = (fields: Record<string, unknown>) =>
  ({ id: 'pi_1', object: 'payment_intent', status: 'succeeded', ...fields }) as unknown as Stripe.PaymentIntent;
const plan = (count: number) => ({ installments: { plan: { count, interval: 'month', type: 'fixed_count' } } });

describe('installment plans', () => {
  it("Stripe's confirmed plan: the charge's payment_method_details first, else the intent's selected plan, else none", () => {
    expect(confirmedInstallments(intent({ payment_method_options: { card: plan(3) } }))).toBe(3);
    expect(
      confirmedInstallments(
        intent({ payment_method_options: { card: plan(3) }, latest_charge: { object: 'charge', payment_method_details: { card: plan(6) } } }),
      ),
    ).toBe(6);
    expect(confirmedInstallments(intent({ payment_method_options: { card: { installments: null } } }))).toBeNull();
    expect(confirmedInstallments(intent({}))).toBeNull();
  });

  it('a renewal order of a subscription first bought in 3 installments says 1: renewals are charged in full', () => {
    const sub = {
      _id: 'sub_1',
      store_id: 'st_1',
      currency: 'brl',
      amount: 4990,
      customer: 'cus_1',
      customer_email: 'a@example.com',
      offer: { id: 'off_1', name: 'Club' },
      product: { id: 'prod_1' },
      default_payment_method: { id: 'pm_1', type: 'card', brand: 'visa', last4: '4242', chargeable: true },
      installments: 3,
      client_reference_id: null,
      test_clock: null,
    } as unknown as SubscriptionDoc;
    const order = renewalOrderDoc(sub, { storeId: 'st_1', subscriptionId: 'sub_1', key: 'k', at: 1_800_000_000 } as never, 'paid', 'tx_1', false);
    expect(order).toMatchObject({ order_type: 'renewal', payment_method_type: 'card', installments: 1 });
  });
});
