// stores create | show | set: the store record and the operator's flags on it.
import { STRIPE_ACCOUNT_ID } from '../../adapters/provider/stripe/accounts';
import type { StoreDoc } from '../../store/collections';
import { createStore, findStore, isStoreSlugTaken, listStores, updateStoreFields } from '../../store/stores';
import { countPaidOrders } from '../../store/orders';
import { bool, positional, str, successUrlOption, type Command, type CommandContext } from './types';

/** "2026-11" -> its first second and the next month's first second, UTC. */
function calendarMonth(month: string): { from: number; to: number } {
  const match = /^(\d{4})-(\d{2})$/.exec(month);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 12) throw new Error('--month is YYYY-MM');
  const [year, index] = [Number(match[1]), Number(match[2]) - 1];
  return { from: Date.UTC(year, index, 1) / 1000, to: Date.UTC(year, index + 1, 1) / 1000 };
}

/** --stripe-account: a connected account id (acct_…), or `none` for the platform account. */
function stripeAccountOption(ctx: CommandContext): string | null | undefined {
  const value = str(ctx, 'stripe-account', false);
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (!STRIPE_ACCOUNT_ID.test(value)) throw new Error('--stripe-account is a Stripe connected account id (acct_…) or none');
  return value;
}

/** --max-charge-amount: a positive integer of minor units, or `default` (the currency's default bound, domain/charge-bounds.ts). */
function maxChargeOption(ctx: CommandContext): number | null | undefined {
  const value = str(ctx, 'max-charge-amount', false);
  if (value === undefined) return undefined;
  if (value === 'default') return null;
  const amount = Number(value);
  if (!Number.isSafeInteger(amount) || amount < 1) throw new Error('--max-charge-amount is a positive integer of minor units (or default)');
  return amount;
}

const formatStore = (result: unknown) => {
  const s = result as StoreDoc;
  return [
    `store ${s._id}  ${s.name}${s.slug ? ` (${s.slug})` : ''}`,
    `  country ${s.country}  currency ${s.currency}  timezone ${s.timezone}`,
    `  active ${s.active}  api ${s.api_enabled}  plan overdue ${s.plan_overdue}  portal ${s.portal_enabled}  custom domain ${s.custom_domain ?? '-'}`,
    `  default success URL ${s.default_success_url ?? '-'}`,
    `  purchase confirmation e-mail ${s.purchase_confirmation_email !== false}`,
    `  buyer e-mails of test purchases to visitor-typed addresses ${s.test_buyer_emails === true}`,
    `  max charge amount ${s.max_charge_amount ?? "default (the currency's, docs/limits.md)"}`,
    `  stripe account ${s.stripe_account ?? '- (the platform account)'}`,
    `  CPF/CNPJ check digits verified ${s.verify_document_digits === true}`,
  ].join('\n');
};

export const storeCommands: Record<string, Command> = {
  'stores create': {
    summary: 'create a store (--name --country --currency --timezone [--slug])',
    options: {
      name: { type: 'string' },
      slug: { type: 'string' },
      country: { type: 'string' },
      currency: { type: 'string' },
      timezone: { type: 'string' },
    },
    async run(ctx) {
      const country = str(ctx, 'country')!;
      const currency = str(ctx, 'currency')!;
      if (!/^[A-Za-z]{2}$/.test(country)) throw new Error('--country is an ISO 3166-1 alpha-2 code');
      if (!/^[A-Za-z]{3}$/.test(currency)) throw new Error('--currency is an ISO 4217 code');
      const timezone = str(ctx, 'timezone', false) ?? 'UTC';
      try {
        new Intl.DateTimeFormat('en', { timeZone: timezone });
      } catch {
        throw new Error(`unknown time zone '${timezone}'`);
      }
      const slug = str(ctx, 'slug', false) ?? null;
      if (slug && (await isStoreSlugTaken(ctx.db, slug))) throw new Error(`slug '${slug}' is taken`);
      return createStore(ctx.db, { name: str(ctx, 'name')!, slug, country, currency, timezone });
    },
    format: formatStore,
  },
  'stores show': {
    summary: 'show a store (<store id>)',
    options: {},
    async run(ctx) {
      const id = positional(ctx, 0, 'store id');
      const store = await findStore(ctx.db, id);
      if (!store) throw new Error(`no store ${id}`);
      return store;
    },
    format: formatStore,
  },
  'stores quota': {
    summary: 'the plan quota: orders of approved charges in a calendar month, UTC (<store id> [--month YYYY-MM], default this month)',
    options: { month: { type: 'string' } },
    async run(ctx) {
      const id = positional(ctx, 0, 'store id');
      if (!(await findStore(ctx.db, id))) throw new Error(`no store ${id}`);
      const month = str(ctx, 'month', false) ?? new Date().toISOString().slice(0, 7);
      const { from, to } = calendarMonth(month);
      const { total, by_type } = await countPaidOrders(ctx.db, id, from, to);
      return { store: id, month, orders: total, by_type };
    },
    format: (result) => {
      const q = result as { store: string; month: string; orders: number; by_type: Record<string, number> };
      return `store ${q.store}  ${q.month}: ${q.orders} orders (checkout ${q.by_type.checkout}, renewal ${q.by_type.renewal}, api ${q.by_type.api})`;
    },
  },
  'stores list': {
    summary: 'list stores',
    options: {},
    async run(ctx) {
      return listStores(ctx.db);
    },
    format: (result) => (result as StoreDoc[]).map(formatStore).join('\n'),
  },
  'stores set': {
    summary:
      'set flags (<store id> [--active] [--api] [--plan-overdue] [--portal] [--purchase-confirmation-email] [--test-buyer-emails] [--custom-domain] [--slug] [--name] [--success-url <url>|none] [--max-charge-amount <minor units>|default] [--stripe-account acct_…|none] [--verify-document-digits])',
    options: {
      active: { type: 'string' },
      api: { type: 'string' },
      'plan-overdue': { type: 'string' },
      portal: { type: 'string' },
      'purchase-confirmation-email': { type: 'string' },
      'custom-domain': { type: 'string' },
      slug: { type: 'string' },
      name: { type: 'string' },
      'test-buyer-emails': { type: 'string' },
      'success-url': { type: 'string' },
      'max-charge-amount': { type: 'string' },
      'stripe-account': { type: 'string' },
      'verify-document-digits': { type: 'string' },
    },
    async run(ctx) {
      const id = positional(ctx, 0, 'store id');
      const set: Partial<StoreDoc> = {};
      const flags: [string, keyof StoreDoc][] = [
        ['active', 'active'],
        ['api', 'api_enabled'],
        ['plan-overdue', 'plan_overdue'],
        ['portal', 'portal_enabled'],
        ['purchase-confirmation-email', 'purchase_confirmation_email'],
        ['test-buyer-emails', 'test_buyer_emails'],
        ['verify-document-digits', 'verify_document_digits'],
      ];
      for (const [option, field] of flags) {
        const value = bool(ctx, option);
        if (value !== undefined) (set as Record<string, unknown>)[field] = value;
      }
      const domain = ctx.values['custom-domain'];
      if (typeof domain === 'string') set.custom_domain = domain === '' || domain === 'none' ? null : domain.toLowerCase();
      const slug = str(ctx, 'slug', false);
      if (slug) {
        if (await isStoreSlugTaken(ctx.db, slug, id)) throw new Error(`slug '${slug}' is taken`);
        set.slug = slug;
      }
      const name = str(ctx, 'name', false);
      if (name) set.name = name;
      const successUrl = successUrlOption(ctx);
      if (successUrl !== undefined) set.default_success_url = successUrl;
      const maxCharge = maxChargeOption(ctx);
      if (maxCharge !== undefined) set.max_charge_amount = maxCharge;
      const stripeAccount = stripeAccountOption(ctx);
      if (stripeAccount !== undefined) set.stripe_account = stripeAccount;
      const store = await updateStoreFields(ctx.db, id, set);
      if (!store) throw new Error(`no store ${id}`);
      return store;
    },
    format: formatStore,
  },
};
