// What this tests: the pure pieces of a renewal the bank asks the buyer to confirm: the dunning rule keeping
// the decline's code and the attempt to confirm (and the API showing the code, never the attempt), the buyer's
// e-mail carrying the portal link in text and HTML, and the log writing the link's token redacted.
import { describe, expect, it } from 'vitest';
import * as rules from '../../domain/subscriptions';
import { renderAuthenticationRequest } from '../../i18n/buyer-emails';
import { redactPath } from '../../api/redact';

const DAY = 86_400;
const t0 = Date.parse('2026-03-01T10:00:00Z') / 1000;

const life = (overrides: Partial<rules.SubscriptionLife> = {}): rules.SubscriptionLife => ({
  status: 'active',
  offer: { id: 'ofr_a', name: 'A' },
  product: { id: 'prd_a', name: 'Product A' },
  product_family: null,
  billing_cycle: 'monthly',
  custom_billing_days: null,
  currency: 'brl',
  amount: 4990,
  current_period_start: t0 - 31 * DAY,
  current_period_end: t0,
  next_billing_at: t0,
  trial_start: null,
  trial_end: null,
  cycles_completed: 1,
  cycle_limit: null,
  cancel_at_period_end: false,
  canceled_at: null,
  ended_at: null,
  cancellation_details: null,
  default_payment_method: { id: 'pm_1', type: 'card', brand: 'visa', last4: '3184', chargeable: true },
  past_due_details: null,
  billing_anchor_day: 1,
  ...overrides,
});

const asked: rules.RenewalAuthentication = { key: 'renewal/sub_1/2/0', transaction_id: 'pi_1', order_id: 'ord_1' };

describe('dunning keeps the reason and the attempt to confirm', () => {
  it('an authentication_required decline is past_due with its code and the attempt; dunning as for any decline', () => {
    const declined = rules.chargeDeclined(life(), t0, { code: rules.AUTHENTICATION_REQUIRED, authentication: asked });
    expect(declined.change).toEqual({
      status: 'past_due',
      past_due_details: { attempts: 1, since: t0, next_retry_at: t0 + DAY, failure_code: 'authentication_required', authentication: asked },
    });
  });

  it('another decline keeps its code and no attempt; runs from before pass no failure and keep the old shape', () => {
    expect(rules.chargeDeclined(life(), t0, { code: 'card_declined', authentication: null }).change.past_due_details).toEqual({
      attempts: 1,
      since: t0,
      next_retry_at: t0 + DAY,
      failure_code: 'card_declined',
    });
    expect(rules.chargeDeclined(life(), t0).change.past_due_details).toEqual({ attempts: 1, since: t0, next_retry_at: t0 + DAY });
  });

  it('an approval clears the attempt with the dunning', () => {
    const pastDue = life({ status: 'past_due', past_due_details: { attempts: 1, since: t0, next_retry_at: t0 + DAY, authentication: asked } });
    expect(rules.chargeApproved(pastDue, t0)).toMatchObject({ status: 'active', past_due_details: null });
  });
});

describe("the buyer's e-mail", () => {
  const mail = renderAuthenticationRequest({
    language: 'pt',
    storeName: 'Loja <Ana>',
    timeZone: 'America/Sao_Paulo',
    customerName: 'Ana',
    product: 'Curso',
    amount: 4990,
    currency: 'brl',
    orderId: 'ord_1',
    link: 'https://portal.example.com/loja/payments/tok_a&b',
  });

  it('names the product and amount in the buyer’s language and carries the portal link in text and HTML (escaped)', () => {
    expect(mail.subject).toBe('Confirme seu pagamento: Curso, R$\u00a049,90');
    expect(mail.text).toContain('Confirmar o pagamento: https://portal.example.com/loja/payments/tok_a&b');
    expect(mail.html).toContain('<a href="https://portal.example.com/loja/payments/tok_a&amp;b" data-action-link>Confirmar o pagamento</a>');
    expect(mail.html).toContain('Loja &lt;Ana&gt;');
  });
});

describe('logs', () => {
  it('write a confirmation link’s token redacted, as a sign-in token', () => {
    expect(redactPath('/portal/loja/payments/abcDEF_123?failed=1')).toBe('/portal/loja/payments/[redacted]');
    expect(redactPath('/payments/abcDEF_123')).toBe('/payments/[redacted]');
    expect(redactPath('/portal/loja/session/xyz')).toBe('/portal/loja/session/[redacted]');
  });
});
