// products / offers / coupons / meters: the catalog the operator sets up for a store.
import type { OfferPrice, OfferUsageRow, ProductFile } from '../../store/collections';
import { findMeter } from '../../store/meters';
import { findOfferById, findProduct } from '../../store/offers';
import { findStore } from '../../store/stores';
import { validateRedirectUrl } from '../../domain/checkout';
import {
  BILLING_CYCLES,
  addOfferUsageRow,
  createCoupon,
  createMeter,
  createOffer,
  createProduct,
  isOfferSlugTaken,
  setCouponActive,
  setProductFiles,
  updateOfferFields,
  type BillingCycle,
} from '../../store/catalog';
import { asJson, bool, num, positional, str, successUrlOption, type Command, type CommandContext } from './types';

/** "brl:4990" or "brl:4990:default" */
function parsePrice(text: string): OfferPrice {
  const [currency, amount, flag] = text.split(':');
  const value = Number(amount);
  if (!currency || !Number.isInteger(value)) throw new Error(`--price '${text}' is currency:amount[:default]`);
  return { currency: currency.toLowerCase(), amount: value, default: flag === 'default' };
}

async function requireStore(ctx: Parameters<Command['run']>[0]): Promise<string> {
  const storeId = str(ctx, 'store')!;
  if (!(await findStore(ctx.db, storeId))) throw new Error(`no store ${storeId}`);
  return storeId;
}

/** --file "name=url" (repeatable): the product's downloadable files; `none` removes them; undefined when not given. */
function parseFiles(ctx: CommandContext): ProductFile[] | undefined {
  const given = ctx.values.file as string[] | undefined;
  if (!given || given.length === 0) return undefined;
  if (given.length === 1 && given[0] === 'none') return [];
  return given.map((entry) => {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new Error(`--file takes "name=https://...", not '${entry}'`);
    return { name: entry.slice(0, eq).trim(), url: validateRedirectUrl('--file', entry.slice(eq + 1).trim(), true) };
  });
}

export const catalogCommands: Record<string, Command> = {
  'products create': {
    summary: 'create a product (--store --name [--family] [--description] [--file "name=https://..."]...)',
    options: {
      store: { type: 'string' },
      name: { type: 'string' },
      family: { type: 'string' },
      description: { type: 'string' },
      file: { type: 'string', multiple: true },
    },
    async run(ctx) {
      const product = await createProduct(ctx.db, {
        storeId: await requireStore(ctx),
        name: str(ctx, 'name')!,
        family: str(ctx, 'family', false) ?? null,
        description: str(ctx, 'description', false) ?? null,
      });
      const files = parseFiles(ctx);
      if (!files) return product;
      await setProductFiles(ctx.db, product._id, files);
      return { ...product, files };
    },
    format: asJson,
  },
  'products set': {
    summary: 'change a product (<prd_ id> [--file "name=https://..."]... replaces its downloadable files; --file none removes them)',
    options: { file: { type: 'string', multiple: true } },
    async run(ctx) {
      const id = positional(ctx, 0, 'product id');
      const files = parseFiles(ctx);
      if (!files) throw new Error('nothing to change: give --file');
      const product = await setProductFiles(ctx.db, id, files);
      if (!product) throw new Error(`no product ${id}`);
      return product;
    },
    format: asJson,
  },
  'offers create': {
    summary:
      'create an offer (--store --product --name --type one_off|recurring --price cur:amount[:default]... [--cycle] [--custom-days] [--trial-days] [--cycle-limit] [--packs 1,5] [--max-installments] [--slug] [--active false] [--success-url <url>])',
    options: {
      store: { type: 'string' },
      product: { type: 'string' },
      name: { type: 'string' },
      type: { type: 'string' },
      price: { type: 'string', multiple: true },
      cycle: { type: 'string' },
      'custom-days': { type: 'string' },
      'trial-days': { type: 'string' },
      'cycle-limit': { type: 'string' },
      packs: { type: 'string' },
      'max-installments': { type: 'string' },
      slug: { type: 'string' },
      active: { type: 'string' },
      'success-url': { type: 'string' },
    },
    async run(ctx) {
      const storeId = await requireStore(ctx);
      const productId = str(ctx, 'product')!;
      if (!(await findProduct(ctx.db, storeId, productId))) {
        throw new Error(`no product ${productId} in store ${storeId}`);
      }
      const type = str(ctx, 'type')!;
      if (type !== 'one_off' && type !== 'recurring') throw new Error('--type is one_off or recurring');
      const prices = ((ctx.values.price as string[] | undefined) ?? []).map(parsePrice);
      if (prices.length > 0 && !prices.some((p) => p.default)) prices[0].default = true;
      const cycle = str(ctx, 'cycle', false);
      if (cycle && !(BILLING_CYCLES as readonly string[]).includes(cycle)) throw new Error(`--cycle is one of ${BILLING_CYCLES.join(', ')}`);
      const slug = str(ctx, 'slug', false) ?? null;
      if (slug && (await isOfferSlugTaken(ctx.db, storeId, slug))) throw new Error(`slug '${slug}' is taken`);
      const packs = str(ctx, 'packs', false);
      return createOffer(ctx.db, {
        storeId,
        productId,
        name: str(ctx, 'name')!,
        type,
        prices,
        slug,
        billingCycle: (cycle as BillingCycle | undefined) ?? null,
        customBillingDays: num(ctx, 'custom-days') ?? null,
        trialDays: num(ctx, 'trial-days') ?? null,
        cycleLimit: num(ctx, 'cycle-limit') ?? null,
        packs: packs ? packs.split(',').map(Number) : [],
        maxInstallments: num(ctx, 'max-installments') ?? null,
        active: bool(ctx, 'active') ?? true,
      }).then(async (offer) => {
        const successUrl = successUrlOption(ctx);
        if (successUrl === undefined) return offer;
        await updateOfferFields(ctx.db, offer._id, { success_url: successUrl });
        return { ...offer, success_url: successUrl };
      });
    },
    format: asJson,
  },
  'offers set': {
    summary: 'change an offer (<ofr_ id> [--active true|false] [--name] [--slug] [--success-url <url>|none])',
    options: { active: { type: 'string' }, name: { type: 'string' }, slug: { type: 'string' }, 'success-url': { type: 'string' } },
    async run(ctx) {
      const id = positional(ctx, 0, 'offer id');
      const set: Parameters<typeof updateOfferFields>[2] = {};
      const active = bool(ctx, 'active');
      if (active !== undefined) set.active = active;
      const name = str(ctx, 'name', false);
      if (name) set.name = name;
      const slug = str(ctx, 'slug', false);
      if (slug) {
        // The slug is the offer's link: two offers of a store with one slug would share it.
        const offer = await findOfferById(ctx.db, id);
        if (offer && (await isOfferSlugTaken(ctx.db, offer.store_id, slug, id))) throw new Error(`slug '${slug}' is taken`);
        set.slug = slug;
      }
      const successUrl = successUrlOption(ctx);
      if (successUrl !== undefined) set.success_url = successUrl;
      const offer = await updateOfferFields(ctx.db, id, set);
      if (!offer) throw new Error(`no offer ${id}`);
      return offer;
    },
    format: asJson,
  },
  'offers usage': {
    summary:
      'add a metered usage row to an offer (<ofr_ id> --meter --currency --unit-amount [--included] [--tiers JSON] [--rounding up|nearest] [--threshold] [--label])',
    options: {
      meter: { type: 'string' },
      currency: { type: 'string' },
      'unit-amount': { type: 'string' },
      included: { type: 'string' },
      tiers: { type: 'string' },
      rounding: { type: 'string' },
      threshold: { type: 'string' },
      label: { type: 'string' },
    },
    async run(ctx) {
      const id = positional(ctx, 0, 'offer id');
      const offer = await findOfferById(ctx.db, id);
      if (!offer) throw new Error(`no offer ${id}`);
      const meter = str(ctx, 'meter')!;
      if (!(await findMeter(ctx.db, offer.store_id, meter))) {
        throw new Error(`no meter ${meter} in the offer's store`);
      }
      const rounding = str(ctx, 'rounding', false) ?? 'up';
      if (rounding !== 'up' && rounding !== 'nearest') throw new Error('--rounding is up or nearest');
      const tiers = str(ctx, 'tiers', false);
      const row: OfferUsageRow = {
        meter,
        currency: str(ctx, 'currency')!.toLowerCase(),
        unit_amount: num(ctx, 'unit-amount', !tiers) ?? 0,
        included_units: num(ctx, 'included') ?? 0,
        tiers: tiers ? (JSON.parse(tiers) as OfferUsageRow['tiers']) : null,
        rounding,
        billing_threshold: num(ctx, 'threshold') ?? null,
        label: str(ctx, 'label', false) ?? null,
      };
      return addOfferUsageRow(ctx.db, offer.store_id, id, row);
    },
    format: asJson,
  },
  'coupons create': {
    summary: 'create a coupon (--store --code (--percent-off N | --amount-off N --currency cur))',
    options: {
      store: { type: 'string' },
      code: { type: 'string' },
      'percent-off': { type: 'string' },
      'amount-off': { type: 'string' },
      currency: { type: 'string' },
    },
    async run(ctx) {
      return createCoupon(ctx.db, {
        storeId: await requireStore(ctx),
        code: str(ctx, 'code')!,
        percentOff: num(ctx, 'percent-off') ?? null,
        amountOff: num(ctx, 'amount-off') ?? null,
        currency: str(ctx, 'currency', false) ?? null,
      });
    },
    format: asJson,
  },
  'coupons set': {
    summary: 'switch a coupon on or off (<cpn_ id> --active true|false)',
    options: { active: { type: 'string' } },
    async run(ctx) {
      const id = positional(ctx, 0, 'coupon id');
      const active = bool(ctx, 'active');
      if (active === undefined) throw new Error('--active is required');
      const coupon = await setCouponActive(ctx.db, id, active);
      if (!coupon) throw new Error(`no coupon ${id}`);
      return coupon;
    },
    format: asJson,
  },
  'meters create': {
    summary: 'create a meter (--store --display-name --event-name [--formula sum|count|last])',
    options: { store: { type: 'string' }, 'display-name': { type: 'string' }, 'event-name': { type: 'string' }, formula: { type: 'string' } },
    async run(ctx) {
      const formula = (str(ctx, 'formula', false) ?? 'sum') as 'sum' | 'count' | 'last';
      if (!['sum', 'count', 'last'].includes(formula)) throw new Error('--formula is sum, count or last');
      return createMeter(ctx.db, {
        storeId: await requireStore(ctx),
        displayName: str(ctx, 'display-name')!,
        eventName: str(ctx, 'event-name')!,
        formula,
      });
    },
    format: asJson,
  },
};
