// demo: the store `npm start` prints on first start — a key, a one-off offer, a recurring monthly
// offer with a metered usage row, and a coupon. Idempotent: later runs report what exists.
import type { Database } from '../../store/database';
import { createStore, createApiKey, findStoreByAddress, updateStoreFields } from '../../store/stores';
import { addOfferUsageRow, createCoupon, createMeter, createOffer, createProduct, storeCatalog } from '../../store/catalog';
import type { Command } from './types';

export const DEMO_SLUG = 'demo';

export async function seedDemoStore(db: Database) {
  const existing = await findStoreByAddress(db, { slug: DEMO_SLUG });
  if (existing) return { created: false, store: existing, api_key: null, ...(await storeCatalog(db, existing._id)) };
  const created = await createStore(db, { name: 'Demo Store', slug: DEMO_SLUG, country: 'BR', currency: 'brl', timezone: 'America/Sao_Paulo' });
  // Local trial purchases with any typed address land in the mail catcher: the demo opts in (production stores do not by default).
  const store = (await updateStoreFields(db, created._id, { test_buyer_emails: true })) ?? created;
  const { key, doc: keyDoc } = await createApiKey(db, { storeId: store._id, name: 'Demo key', scopes: ['read', 'write'] });
  const course = await createProduct(db, { storeId: store._id, name: 'Photography Course', family: 'courses' });
  const oneOff = await createOffer(db, {
    storeId: store._id,
    productId: course._id,
    name: 'Photography Course (lifetime access)',
    type: 'one_off',
    slug: 'photo-course',
    prices: [
      { currency: 'brl', amount: 19700, default: true },
      { currency: 'usd', amount: 3900, default: false },
    ],
    packs: [1, 5, 10],
    maxInstallments: 12,
  });
  const platform = await createProduct(db, { storeId: store._id, name: 'Image API', family: 'platform' });
  const monthly = await createOffer(db, {
    storeId: store._id,
    productId: platform._id,
    name: 'Image API Pro (monthly)',
    type: 'recurring',
    slug: 'image-api-pro',
    prices: [
      { currency: 'brl', amount: 4990, default: true },
      { currency: 'usd', amount: 990, default: false },
    ],
    billingCycle: 'monthly',
    trialDays: 7,
  });
  const meter = await createMeter(db, { storeId: store._id, displayName: 'Images processed', eventName: 'image.processed' });
  const withUsage = await addOfferUsageRow(db, store._id, monthly._id, {
    meter: meter._id,
    currency: 'brl',
    unit_amount: 2.5,
    included_units: 1000,
    tiers: null,
    rounding: 'up',
    billing_threshold: null,
    label: 'Images processed',
  });
  const coupon = await createCoupon(db, { storeId: store._id, code: 'WELCOME10', percentOff: 10 });
  return { created: true, store, api_key: key, api_key_id: keyDoc._id, offers: [oneOff, withUsage ?? monthly], meter, coupon };
}

export const demoCommands: Record<string, Command> = {
  demo: {
    summary: 'create the demo store once (key, offers, coupon); later runs report it',
    options: {},
    run: (ctx) => seedDemoStore(ctx.db),
    format: (r) => {
      const d = r as Awaited<ReturnType<typeof seedDemoStore>>;
      const lines = [`demo store ${d.store._id} (${d.created ? 'created' : 'exists'})`];
      if (d.api_key) lines.push(`API key (shown once): ${d.api_key}`);
      for (const o of d.offers) lines.push(`offer ${o._id}  ${o.name}  ${o.type}`);
      if (d.coupon) lines.push(`coupon ${d.coupon.code}`);
      return lines.join('\n');
    },
  },
};
