// /v1/customers: list (email filter), retrieve, create (201, or 200 with the existing customer for
// a known email), update (partial; metadata replaces the map).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { changeCustomer, createCustomer, existingCustomerByEmail } from '../../services/customers';
import { requiredNullParam } from '../plugins/body-parsing';
import { findClaimedCustomer, findCustomer, listCustomers } from '../../store/customers';
import { DOCUMENT_TYPES } from '../../domain/documents';
import { notFound } from '../../domain/errors';
import { authOf, eventRequestOf } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, NoQuery, MetadataInput, withErrors } from '../http-schemas';
import { customerObject } from '../../resources/customer';

const NullableText = Nullable(Type.String());

const AddressInput = Type.Object(
  {
    line1: Type.Optional(NullableText),
    line2: Type.Optional(NullableText),
    number: Type.Optional(NullableText),
    district: Type.Optional(NullableText),
    city: Type.Optional(NullableText),
    state: Type.Optional(NullableText),
    postal_code: Type.Optional(NullableText),
    country: Type.Optional(NullableText),
  },
  { additionalProperties: false },
);

const DocumentInput = Type.Object(
  {
    type: Type.Union(
      DOCUMENT_TYPES.map((t) => Type.Literal(t)),
      { examples: ['cpf'] },
    ),
    number: Type.String({ minLength: 1, maxLength: 40, description: 'Dots and dashes are removed.', examples: ['529.982.247-25'] }),
  },
  { additionalProperties: false },
);

// Examples are valid values, so generated clients and the fuzzer can create a customer.
const fields = {
  email: Type.String({ minLength: 3, maxLength: 254, description: 'Stored lowercase.', examples: ['ana@example.com'] }),
  name: Type.String({ minLength: 3, maxLength: 120, description: '3 to 120 characters.', examples: ['Ana Souza'] }),
  phone: Type.String({
    minLength: 1,
    maxLength: 40,
    description: "International format, or a national number of the store's country.",
    examples: ['+5511987654321'],
  }),
  document: DocumentInput,
  address: Nullable(AddressInput),
  locale: NullableText,
  metadata: MetadataInput,
};

const CreateBody = Type.Object(
  {
    email: fields.email,
    name: fields.name,
    phone: fields.phone,
    document: fields.document,
    address: Type.Optional(fields.address),
    locale: Type.Optional(fields.locale),
    metadata: Type.Optional(fields.metadata),
    test_clock: Type.Optional(
      Nullable(
        Type.String({ maxLength: 64, description: 'clock_ of the store (test helpers): the customer lives on that clock; set only at creation.' }),
      ),
    ),
  },
  { additionalProperties: false },
);

const UpdateBody = Type.Partial(Type.Object(fields), { additionalProperties: false });

const ListQuery = Type.Object(
  { email: Type.Optional(Type.String({ description: 'Case-insensitive exact match.' })), ...PaginationQuery },
  { additionalProperties: false },
);

const CustomerRef = Type.Ref('Customer');

/** Whether the route's validation will refuse this body (tried on a copy: validation coerces in place). */
function bodyRefused(request: FastifyRequest): boolean {
  const validate = request.getValidationFunction('body');
  if (!validate || typeof (request.body as { email?: unknown } | null)?.email !== 'string') return false;
  const copy = structuredClone(request.body);
  return requiredNullParam(request.routeOptions.schema?.body as Parameters<typeof requiredNullParam>[0], copy) !== null || !validate(copy);
}

const customerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  app.get(
    '/customers',
    { schema: { tags: ['customers'], summary: 'List customers', querystring: ListQuery, response: withErrors({ 200: listEnvelope(CustomerRef) }) } },
    async (request) => {
      const { store } = authOf(request);
      const { email, ...page } = request.query;
      if (email !== undefined && page.starting_after === undefined && page.ending_before === undefined) {
        // An email names at most one customer: its claim answers without reading the collection.
        const claimed = await findClaimedCustomer(db, store._id, email.trim());
        if (claimed) return { object: 'list' as const, url: '/v1/customers', has_more: false, data: [customerObject(claimed)] };
      }
      const filter = { email: email?.trim().toLowerCase() };
      return paginate((window) => listCustomers(db, store._id, filter, window), {
        query: page,
        url: '/v1/customers',
        toApi: customerObject,
      });
    },
  );

  app.get(
    '/customers/:id',
    {
      schema: {
        tags: ['customers'],
        summary: 'Retrieve a customer',
        params: IdParams,
        querystring: NoQuery,
        response: withErrors({ 200: CustomerRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await findCustomer(db, store._id, request.params.id);
      if (!doc) throw notFound('customer', request.params.id);
      return customerObject(doc);
    },
  );

  app.post(
    '/customers',
    {
      schema: {
        tags: ['customers'],
        summary: 'Create a customer (or return the existing one with that email)',
        body: CreateBody,
        response: withErrors({ 200: CustomerRef, 201: CustomerRef }),
      },
      // "If a customer with that email already exists: 200 with the existing customer, no field
      // changed": looked up before the other fields are validated, so their problems do not matter.
      // The claim answers first; the unique email is asked too when this body would be refused here
      // (a body that validates meets it in createCustomer).
      preValidation: async (request, reply) => {
        const storeId = authOf(request).store._id;
        const body = request.body as { email?: unknown; test_clock?: unknown } | null;
        const email = body?.email;
        // A clock's customers have their own emails: the store's customer is never a clock's, nor the reverse.
        const clock = typeof body?.test_clock === 'string' && body.test_clock !== '' ? body.test_clock : null;
        const existing =
          (await existingCustomerByEmail(db, storeId, email, false, clock)) ??
          (bodyRefused(request) ? await existingCustomerByEmail(db, storeId, email, true, clock) : null);
        if (existing) return reply.status(200).send(customerObject(existing));
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const { customer, created } = await createCustomer(app.deps, store, request.body, eventRequestOf(request));
      reply.status(created ? 201 : 200);
      return customerObject(customer);
    },
  );

  app.post(
    '/customers/:id',
    {
      schema: {
        tags: ['customers'],
        summary: 'Update a customer',
        params: IdParams,
        body: UpdateBody,
        response: withErrors({ 200: CustomerRef }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      const doc = await changeCustomer(app.deps, store, request.params.id, request.body, eventRequestOf(request));
      return customerObject(doc);
    },
  );
};

export default customerRoutes;
