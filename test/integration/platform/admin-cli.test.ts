// The admin CLI's --json output (stores, keys, products, offers, coupons) against the suite's FerretDB,
// and its effects seen through the API over HTTP: a created key works and is printed once, lists show
// only its last four characters, revocation refuses the very next request, store flags within a second.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { call, startTestApi, type TestApi } from '../../support/api';
import { runAdmin } from '../../../admin/cli';
import { collections } from '../../../store/collections';
import { findStoreStripeAccount } from '../../../store/stores';
import { CURRENT_API_VERSION } from '../../../domain/api-keys';
import { projectRoot } from '../../../temporal-dev/tools';

let mongo: TestMongo;
let api: TestApi;
let adminEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  adminEnv = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: mongo.db.databaseName };
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

/** Runs `npm run admin -- <command words> <args> --json`; it must succeed and print one JSON document. */
async function admin(command: string, ...args: string[]): Promise<any> {
  const { code, output } = await runAdmin([...command.split(' '), ...args, '--json'], adminEnv);
  expect(code, output).toBe(0);
  return JSON.parse(output);
}

async function adminRefuses(command: string, ...args: string[]): Promise<string> {
  const { code, output } = await runAdmin([...command.split(' '), ...args, '--json'], adminEnv);
  expect(code, output).toBe(1);
  const parsed = JSON.parse(output) as { error: string };
  expect(Object.keys(parsed)).toEqual(['error']);
  return parsed.error;
}

let slugSeq = 0;
const newSlug = () => `cli-${Date.now().toString(36)}-${++slugSeq}`;

async function newStore(name = 'CLI Store'): Promise<any> {
  return admin('stores create', '--name', name, '--slug', newSlug(), '--country', 'br', '--currency', 'BRL', '--timezone', 'America/Sao_Paulo');
}

const account = (key: string) => call(api, key, 'GET', '/v1/account');

/** Store flags reach authentication within the store cache's second (store/stores.ts). */
const accountAnswers = (key: string, status: number) =>
  waitFor(
    async () => {
      const res = await account(key);
      return res.status === status ? res : null;
    },
    { timeoutMs: 5_000, intervalMs: 100, description: `GET /v1/account to answer ${status}` },
  );

describe('stores', () => {
  it('stores create --json prints the store record with normalised country and currency and the default flags', async () => {
    const slug = newSlug();
    const store = await admin(
      'stores create',
      '--name',
      'Acme CLI',
      '--slug',
      slug,
      '--country',
      'br',
      '--currency',
      'BRL',
      '--timezone',
      'America/Sao_Paulo',
    );
    expect(store).toEqual({
      _id: expect.stringMatching(/^acct_/),
      name: 'Acme CLI',
      slug,
      country: 'BR',
      currency: 'brl',
      timezone: 'America/Sao_Paulo',
      active: true,
      api_enabled: true,
      plan_overdue: false,
      portal_enabled: true,
      custom_domain: null,
      created: expect.any(Number),
    });
    expect(await admin('stores show', store._id)).toEqual(store);
  });

  it('stores create refuses a bad country, currency, time zone or a taken slug with a JSON error', async () => {
    const store = await newStore();
    const base = ['--name', 'X', '--currency', 'brl', '--timezone', 'UTC'];
    expect(await adminRefuses('stores create', ...base, '--country', 'BRA')).toMatch(/--country/);
    expect(await adminRefuses('stores create', '--name', 'X', '--country', 'BR', '--currency', 'reais')).toMatch(/--currency/);
    expect(await adminRefuses('stores create', '--name', 'X', '--country', 'BR', '--currency', 'brl', '--timezone', 'Mars/Base')).toMatch(
      /time zone/,
    );
    expect(await adminRefuses('stores create', ...base, '--country', 'BR', '--slug', store.slug)).toMatch(/taken/);
    expect(await adminRefuses('stores show', 'acct_missing')).toMatch(/no store/);
  });

  it('stores set --json prints the updated store: API off answers 403 api_not_enabled, inactive 403 project_inactive, both on again 200', async () => {
    const store = await newStore();
    const { key } = await admin('keys create', '--store', store._id, '--name', 'flags');
    expect((await account(key)).status).toBe(200);

    const apiOff = await admin('stores set', store._id, '--api', 'false');
    expect({ ...apiOff, api_enabled: true }).toEqual(store);
    expect(apiOff.api_enabled).toBe(false);
    const off = await accountAnswers(key, 403);
    expect([off.body.error.type, off.body.error.code]).toEqual(['permission_error', 'api_not_enabled']);

    await admin('stores set', store._id, '--api', 'true');
    await accountAnswers(key, 200);

    const inactive = await admin('stores set', store._id, '--active', 'false');
    expect(inactive.active).toBe(false);
    const refused = await accountAnswers(key, 403);
    expect([refused.body.error.type, refused.body.error.code]).toEqual(['permission_error', 'project_inactive']);

    await admin('stores set', store._id, '--active', 'true');
    await accountAnswers(key, 200);
  });

  it('stores set changes plan overdue, portal, custom domain (lowercased; "none" clears it), name and slug', async () => {
    const store = await newStore();
    const slug = newSlug();
    const changed = await admin(
      'stores set',
      store._id,
      '--plan-overdue',
      'true',
      '--portal',
      'off',
      '--custom-domain',
      'Pay.Example.COM',
      '--name',
      'Renamed',
      '--slug',
      slug,
    );
    expect(changed).toEqual({ ...store, plan_overdue: true, portal_enabled: false, custom_domain: 'pay.example.com', name: 'Renamed', slug });
    expect((await admin('stores set', store._id, '--custom-domain', 'none')).custom_domain).toBeNull();
    expect(await adminRefuses('stores set', store._id, '--api', 'maybe')).toMatch(/--api takes true or false/);
    expect(await adminRefuses('stores set', 'acct_missing', '--api', 'true')).toMatch(/no store/);
  });

  it('stores set --stripe-account names the connected Stripe account the connection reads; stores show prints it; none clears it; a malformed id is refused', async () => {
    const store = await newStore();
    expect(await findStoreStripeAccount(mongo.db, store._id)).toBeNull();
    expect(await admin('stores set', store._id, '--stripe-account', 'acct_1Q2w3E4r5T6y7U8i')).toEqual({
      ...store,
      stripe_account: 'acct_1Q2w3E4r5T6y7U8i',
    });
    expect(await findStoreStripeAccount(mongo.db, store._id)).toBe('acct_1Q2w3E4r5T6y7U8i');
    const shown = await runAdmin(['stores', 'show', store._id], adminEnv);
    expect(shown.output).toMatch(/stripe account acct_1Q2w3E4r5T6y7U8i/);
    for (const bad of ['acct_', 'cus_123', 'acct_12 34']) {
      expect(await adminRefuses('stores set', store._id, '--stripe-account', bad)).toMatch(/--stripe-account is a Stripe connected account id/);
    }
    expect((await admin('stores set', store._id, '--stripe-account', 'none')).stripe_account).toBeNull();
    expect(await findStoreStripeAccount(mongo.db, store._id)).toBeNull();
  });
});

describe('keys', () => {
  it('keys create --json prints the full key once, pinned to the current version; only a hash of the secret is stored; the key answers GET /v1/account', async () => {
    const store = await newStore();
    const created = await admin('keys create', '--store', store._id, '--name', 'backend', '--scopes', 'read,write');
    expect(created).toEqual({
      id: expect.stringMatching(/^ak_[A-Za-z0-9]{12}$/),
      store: store._id,
      name: 'backend',
      scopes: ['read', 'write'],
      version: CURRENT_API_VERSION,
      last4: created.key.slice(-4),
      expires_at: null,
      revoked_at: null,
      created: expect.any(Number),
      key: expect.stringMatching(/^vk_live_[A-Za-z0-9]{44}$/),
    });
    const secret = created.key.slice('vk_live_'.length + 12);
    const stored = await collections(mongo.db).apiKeys.findOne({ _id: created.id });
    expect(JSON.stringify(stored)).not.toContain(secret);

    const res = await account(created.key);
    expect([res.status, res.body.id, res.body.api_key]).toEqual([
      200,
      store._id,
      { id: created.id, name: 'backend', scopes: ['read', 'write'], default_version: CURRENT_API_VERSION },
    ]);
  });

  it('a read-only key created by the CLI reads but may not write (403 insufficient_scope); an expired one answers 401 api_key_expired', async () => {
    const store = await newStore();
    const reader = await admin('keys create', '--store', store._id, '--name', 'reader', '--scopes', 'read');
    expect(reader.scopes).toEqual(['read']);
    expect((await account(reader.key)).status).toBe(200);
    const write = await call(api, reader.key, 'POST', '/v1/customers', { json: {} });
    expect([write.status, write.body.error.code]).toEqual([403, 'insufficient_scope']);

    const expired = await admin('keys create', '--store', store._id, '--name', 'old', '--expires', '2020-01-01T00:00:00Z');
    expect(expired.expires_at).toBe(Date.parse('2020-01-01T00:00:00Z') / 1000);
    const res = await account(expired.key);
    expect([res.status, res.body.error.code]).toEqual([401, 'api_key_expired']);
    expect(await adminRefuses('keys create', '--store', store._id, '--name', 'x', '--scopes', 'admin')).toMatch(/--scopes/);
    expect(await adminRefuses('keys create', '--store', 'acct_missing', '--name', 'x')).toMatch(/no store/);
  });

  it('keys list --json shows every key of the store with its last four characters only: never the key, its secret or its hash', async () => {
    const store = await newStore();
    const other = await newStore();
    const first = await admin('keys create', '--store', store._id, '--name', 'one');
    const second = await admin('keys create', '--store', store._id, '--name', 'two', '--scopes', 'read');
    await admin('keys create', '--store', other._id, '--name', 'elsewhere');

    const { output } = await runAdmin(['keys', 'list', '--store', store._id, '--json'], adminEnv);
    const listed = JSON.parse(output) as any[];
    expect(listed.map((k) => k.id).sort()).toEqual([first.id, second.id].sort());
    for (const created of [first, second]) {
      const { key, ...shown } = created;
      expect(listed.find((k) => k.id === created.id)).toEqual(shown);
      expect(output).not.toContain(key);
      expect(output).not.toContain(key.slice('vk_live_'.length + 12, -4));
    }
    expect(output).not.toContain('secret_hash');
  });

  it('keys revoke --json prints the key with revoked_at; the very next request answers 401 api_key_revoked and the key stays listed', async () => {
    const store = await newStore();
    const created = await admin('keys create', '--store', store._id, '--name', 'soon revoked');
    expect((await account(created.key)).status).toBe(200);

    const revoked = await admin('keys revoke', created.id);
    const { key: _key, ...shown } = created;
    expect(revoked).toEqual({ ...shown, revoked_at: expect.any(Number) });
    const res = await account(created.key);
    expect([res.status, res.body.error.type, res.body.error.code]).toEqual([401, 'authentication_error', 'api_key_revoked']);

    // Revocation is irreversible: a second revoke keeps the first time.
    expect(await admin('keys revoke', created.id)).toEqual(revoked);
    const listed = (await admin('keys list', '--store', store._id)) as any[];
    expect(listed.find((k) => k.id === created.id).revoked_at).toBe(revoked.revoked_at);
    expect(await adminRefuses('keys revoke', 'ak_missing00000')).toMatch(/no key/);
  });
});

describe('catalog', () => {
  it('products create --json prints the product; the API returns it', async () => {
    const store = await newStore();
    const product = await admin('products create', '--store', store._id, '--name', 'Course', '--family', 'courses', '--description', 'A course');
    expect(product).toEqual({
      _id: expect.stringMatching(/^prd_/),
      store_id: store._id,
      name: 'Course',
      description: 'A course',
      family: 'courses',
      active: true,
      created: expect.any(Number),
    });
    const { key } = await admin('keys create', '--store', store._id, '--name', 'reader', '--scopes', 'read');
    const res = await call(api, key, 'GET', `/v1/products/${product._id}`);
    expect([res.status, res.body.name, res.body.family]).toEqual([200, 'Course', 'courses']);
  });

  it('offers create --json prints one-off and recurring offers with prices, cycle, trial, limit, packs and installments; the API returns them', async () => {
    const store = await newStore();
    const product = await admin('products create', '--store', store._id, '--name', 'Pro');
    const recurring = await admin(
      'offers create',
      '--store',
      store._id,
      '--product',
      product._id,
      '--name',
      'Pro monthly',
      '--type',
      'recurring',
      '--price',
      'usd:990',
      '--price',
      'brl:4990:default',
      '--cycle',
      'monthly',
      '--trial-days',
      '7',
      '--cycle-limit',
      '12',
      '--max-installments',
      '3',
      '--slug',
      'pro-monthly',
    );
    expect(recurring).toEqual({
      _id: expect.stringMatching(/^ofr_/),
      store_id: store._id,
      name: 'Pro monthly',
      slug: 'pro-monthly',
      type: 'recurring',
      active: true,
      product_id: product._id,
      prices: [
        { currency: 'usd', amount: 990, default: false },
        { currency: 'brl', amount: 4990, default: true },
      ],
      billing_cycle: 'monthly',
      custom_billing_days: null,
      trial_days: 7,
      cycle_limit: 12,
      packs: [],
      max_installments: 3,
      usage: [],
      created: expect.any(Number),
    });
    const oneOff = await admin(
      'offers create',
      '--store',
      store._id,
      '--product',
      product._id,
      '--name',
      'Pro once',
      '--type',
      'one_off',
      '--price',
      'brl:9900',
      '--packs',
      '1,5',
      '--active',
      'false',
    );
    expect(oneOff).toMatchObject({
      type: 'one_off',
      active: false,
      prices: [{ currency: 'brl', amount: 9900, default: true }],
      packs: [1, 5],
      billing_cycle: null,
      trial_days: null,
    });
    const custom = await admin(
      'offers create',
      '--store',
      store._id,
      '--product',
      product._id,
      '--name',
      'Every 10 days',
      '--type',
      'recurring',
      '--price',
      'brl:100',
      '--cycle',
      'custom',
      '--custom-days',
      '10',
    );
    expect([custom.billing_cycle, custom.custom_billing_days]).toEqual(['custom', 10]);

    const { key } = await admin('keys create', '--store', store._id, '--name', 'reader', '--scopes', 'read');
    const res = await call(api, key, 'GET', `/v1/offers/${recurring._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: recurring._id,
      object: 'offer',
      type: 'recurring',
      prices: recurring.prices,
      trial_days: 7,
      cycle_limit: 12,
      product: { id: product._id },
    });

    expect(
      await adminRefuses('offers create', '--store', store._id, '--product', product._id, '--name', 'x', '--type', 'weekly', '--price', 'brl:1'),
    ).toMatch(/--type/);
    expect(
      await adminRefuses('offers create', '--store', store._id, '--product', product._id, '--name', 'x', '--type', 'recurring', '--price', 'brl:1'),
    ).toMatch(/billing cycle/);
    expect(
      await adminRefuses('offers create', '--store', store._id, '--product', 'prd_missing', '--name', 'x', '--type', 'one_off', '--price', 'brl:1'),
    ).toMatch(/no product/);
  });

  it('offers usage --json adds a metered usage row to the offer', async () => {
    const store = await newStore();
    const product = await admin('products create', '--store', store._id, '--name', 'API');
    const offer = await admin(
      'offers create',
      '--store',
      store._id,
      '--product',
      product._id,
      '--name',
      'API monthly',
      '--type',
      'recurring',
      '--price',
      'brl:1000',
      '--cycle',
      'monthly',
    );
    const meter = await admin('meters create', '--store', store._id, '--display-name', 'Calls', '--event-name', 'api_call');
    const withUsage = await admin(
      'offers usage',
      offer._id,
      '--meter',
      meter._id,
      '--currency',
      'BRL',
      '--unit-amount',
      '5',
      '--included',
      '100',
      '--threshold',
      '5000',
    );
    expect(withUsage.usage).toEqual([
      { meter: meter._id, currency: 'brl', unit_amount: 5, included_units: 100, tiers: null, rounding: 'up', billing_threshold: 5000, label: null },
    ]);
  });

  it('coupons create --json prints percent-off and amount-off coupons; duplicates and half-specified discounts are refused', async () => {
    const store = await newStore();
    const percent = await admin('coupons create', '--store', store._id, '--code', 'Welcome10', '--percent-off', '10');
    expect(percent).toEqual({
      _id: expect.stringMatching(/^cpn_/),
      store_id: store._id,
      code: 'Welcome10',
      code_lower: 'welcome10',
      percent_off: 10,
      amount_off: null,
      currency: null,
      active: true,
      created: expect.any(Number),
    });
    const amount = await admin('coupons create', '--store', store._id, '--code', 'FIVE', '--amount-off', '500', '--currency', 'brl');
    expect([amount.percent_off, amount.amount_off, amount.currency]).toEqual([null, 500, 'brl']);
    expect(await adminRefuses('coupons create', '--store', store._id, '--code', 'WELCOME10', '--percent-off', '5')).toMatch(/already exists/);
    expect(
      await adminRefuses('coupons create', '--store', store._id, '--code', 'BOTH', '--percent-off', '5', '--amount-off', '5', '--currency', 'brl'),
    ).toMatch(/either percent off or amount off/);
    expect(await adminRefuses('coupons create', '--store', store._id, '--code', 'NOCUR', '--amount-off', '5')).toMatch(/currency/);
  });
});

describe('as a process', () => {
  it('`node admin/cli.ts ... --json` prints one JSON document on stdout (exit 0) and a JSON error on stderr (exit 1)', async () => {
    const store = await newStore('Process Store');
    const run = promisify(execFile);
    const env = { ...process.env, ...adminEnv };
    const shown = await run(process.execPath, ['--import', 'tsx', 'admin/cli.ts', 'stores', 'show', store._id, '--json'], {
      cwd: projectRoot,
      env,
      timeout: 60_000,
    });
    expect(JSON.parse(shown.stdout)).toEqual(store);

    const failed = await run(process.execPath, ['--import', 'tsx', 'admin/cli.ts', 'stores', 'show', 'acct_missing', '--json'], {
      cwd: projectRoot,
      env,
      timeout: 60_000,
    }).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed && [failed.code, failed.stdout, JSON.parse(failed.stderr)]).toEqual([1, '', { error: 'no store acct_missing' }]);
  });

  it('run through a symlink in a folder whose name has a space, the CLI still recognises itself as the entry point and answers', async () => {
    const store = await newStore('Linked Store');
    const folder = mkdtempSync(join(tmpdir(), 'admin cli '));
    const link = join(folder, 'cli.ts');
    symlinkSync(join(projectRoot, 'admin/cli.ts'), link);
    try {
      const run = promisify(execFile);
      const shown = await run(process.execPath, ['--import', 'tsx', link, 'stores', 'show', store._id, '--json'], {
        cwd: projectRoot,
        env: { ...process.env, ...adminEnv },
        timeout: 60_000,
      });
      expect(JSON.parse(shown.stdout)).toEqual(store);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a command given as one argument ("stores show") keeps the options that follow it', async () => {
    const store = await newStore('One Word Store');
    const { code, output } = await runAdmin(['stores show', store._id, '--json'], adminEnv);
    expect([code, JSON.parse(output)]).toEqual([0, store]);
  });
});
