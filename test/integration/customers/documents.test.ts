// What this tests: customer documents as the spec says, over real HTTP: dots and dashes are removed and
// any CPF (11 digits) or CNPJ (14 digits) is accepted whatever its check digits; a store that asks for it
// (admin CLI `stores set <id> --verify-document-digits true`) refuses wrong check digits with 400
// parameter_invalid on document.number, and `false` turns it off again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { testMongo, waitFor, type TestMongo } from '../../support/env';
import { call, createTestStore, startTestApi, type TestApi, type TestStore } from '../../support/api';
import { runAdmin } from '../../../admin/cli';

let mongo: TestMongo;
let api: TestApi;
let store: TestStore;
let seq = 0;

beforeAll(async () => {
  mongo = await testMongo();
  api = await startTestApi({ db: mongo.db });
  store = await createTestStore(mongo.db);
});
afterAll(async () => {
  await api?.close();
  await mongo?.close();
});

const createCustomer = (document: { type: string; number: string }) =>
  call(api, store.key, 'POST', '/v1/customers', {
    json: { email: `doc${++seq}-${Date.now()}@example.com`, name: 'Ana Souza', phone: '+5511987654321', document },
  });

async function setVerification(on: boolean): Promise<void> {
  const env = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: mongo.db.databaseName };
  const { code, output } = await runAdmin(['stores', 'set', store.store._id, '--verify-document-digits', String(on), '--json'], env);
  expect(code, output).toBe(0);
  expect(JSON.parse(output).verify_document_digits).toBe(on);
}

describe('customer documents', () => {
  it('by default any CPF and CNPJ of the right length is accepted, dots, dashes (and a CNPJ slash) removed', async () => {
    const cpf = await createCustomer({ type: 'cpf', number: '123.456.789-00' });
    expect([cpf.status, cpf.body.document]).toEqual([201, { type: 'cpf', number_masked: '*******8900' }]);
    const cnpj = await createCustomer({ type: 'cnpj', number: '12.345.678/0001-00' });
    expect([cnpj.status, cnpj.body.document]).toEqual([201, { type: 'cnpj', number_masked: '**********0100' }]);
  });

  it('a CPF or CNPJ of another length, or with letters, is still 400 parameter_invalid on document.number', async () => {
    for (const document of [
      { type: 'cpf', number: '123.456.789' },
      { type: 'cpf', number: '123.456.789-0A' },
      { type: 'cnpj', number: '12.345.678/0001' },
    ]) {
      const res = await createCustomer(document);
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([400, 'parameter_invalid', 'document.number']);
    }
  });

  it('a store that verifies check digits refuses wrong ones and keeps right ones; turned off, accepts them again', async () => {
    await setVerification(true);
    const refused = await waitFor(
      async () => {
        const res = await createCustomer({ type: 'cpf', number: '123.456.789-00' });
        return res.status === 400 ? res : null;
      },
      { description: 'the setting reaches the API (its store cache lives a second)' },
    );
    expect([refused.body.error.code, refused.body.error.param]).toEqual(['parameter_invalid', 'document.number']);
    for (const number of ['12.345.678/0001-00', '11.222.333/0001-82']) {
      const cnpj = await createCustomer({ type: 'cnpj', number });
      expect([cnpj.status, cnpj.body.error?.param]).toEqual([400, 'document.number']);
    }
    for (const number of ['529.982.247-24', '111.111.111-11']) {
      const cpf = await createCustomer({ type: 'cpf', number });
      expect([cpf.status, cpf.body.error?.param]).toEqual([400, 'document.number']);
    }
    expect((await createCustomer({ type: 'cpf', number: '529.982.247-25' })).status).toBe(201);
    expect((await createCustomer({ type: 'cnpj', number: '11.222.333/0001-81' })).status).toBe(201);
    await setVerification(false);
    await waitFor(async () => (await createCustomer({ type: 'cpf', number: '123.456.789-00' })).status === 201 || null, {
      description: 'the setting is off again',
    });
  });
});
