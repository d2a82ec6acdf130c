// What /v1/openapi.json adds beyond the route schemas so a client (and a fuzzer's stateful phase) can walk
// real objects: OpenAPI `links` from each create (and each list's first item) to its retrieve, update,
// actions and lists, and the rules the handlers enforce in code with the spec's own codes (patterns,
// formats, lengths, enums), written into the document's request schemas only: validation stays in code.

type Json = Record<string, unknown>;
type Operation = {
  operationId?: string;
  parameters?: { in: string; name: string; required?: boolean }[];
  responses?: Record<string, Json>;
  requestBody?: { content?: Record<string, { schema?: Json }> };
};
export type DeepenableDocument = { paths?: Record<string, Record<string, Operation>> };

/** One link: the target operation and where its parameters (or body fields) come from in the response. */
interface LinkTo {
  operationId: string;
  parameters?: Record<string, string>;
  requestBody?: Record<string, string>;
}

const ID = '$response.body#/id';
const FIRST = '$response.body#/data/0/id';
const byId = (operationId: string, from = ID): LinkTo => ({ operationId, parameters: { id: from } });
const each = (operationIds: string[], from = ID) => operationIds.map((id) => byId(id, from));

const CUSTOMER_BY_ID = ['get_customers_by_id', 'post_customers_by_id'];
const SESSION_BY_ID = ['get_checkout_sessions_by_id', 'post_checkout_sessions_by_id_expire'];
const ENDPOINT_BY_ID = [
  'get_webhook_endpoints_by_id',
  'post_webhook_endpoints_by_id',
  'post_webhook_endpoints_by_id_rotate_secret',
  'post_webhook_endpoints_by_id_test',
  'get_webhook_endpoints_by_id_deliveries',
  'delete_webhook_endpoints_by_id',
];
const SUBSCRIPTION_BY_ID = [
  'get_subscriptions_by_id',
  'post_subscriptions_by_id',
  'post_subscriptions_by_id_pause',
  'post_subscriptions_by_id_resume',
  'post_subscriptions_by_id_reactivate',
  'post_subscriptions_by_id_change_offer',
  'post_subscriptions_by_id_charges',
  'get_subscriptions_by_id_charges',
  'post_subscriptions_by_id_usage_items',
  'get_subscriptions_by_id_usage_items',
  'get_subscriptions_by_id_usage',
  'delete_subscriptions_by_id',
];
const METER_BY_ID = ['get_billing_meters_by_id', 'post_billing_meters_by_id', 'post_billing_meters_by_id_deactivate'];
const CLOCK_BY_ID = ['get_test_helpers_test_clocks_by_id', 'post_test_helpers_test_clocks_by_id_advance', 'delete_test_helpers_test_clocks_by_id'];
const customerLists = (from: string): LinkTo[] => [
  { operationId: 'get_subscriptions', parameters: { customer: from } },
  { operationId: 'get_orders', parameters: { customer: from } },
  { operationId: 'get_checkout_sessions', parameters: { customer: from } },
  { operationId: 'post_billing_portal_sessions', requestBody: { customer: from } },
];
const actionsBack = (from = ID) => each(['get_subscriptions_by_id', 'post_subscriptions_by_id_pause', 'post_subscriptions_by_id_resume'], from);

/** From each operation (source operationId) to what its answer lets a client call next. */
export const OPERATION_LINKS: Record<string, LinkTo[]> = {
  post_customers: [...each(CUSTOMER_BY_ID), ...customerLists(ID), { operationId: 'get_customers', parameters: { email: '$response.body#/email' } }],
  get_customers: [...each(CUSTOMER_BY_ID, FIRST), ...customerLists(FIRST)],
  post_checkout_sessions: [...each(SESSION_BY_ID), { operationId: 'get_checkout_sessions', parameters: { status: '$response.body#/status' } }],
  get_checkout_sessions: each(SESSION_BY_ID, FIRST),
  get_offers: [byId('get_offers_by_id', FIRST), { operationId: 'post_checkout_sessions', requestBody: { offer: FIRST } }],
  get_offers_by_id: [{ operationId: 'post_checkout_sessions', requestBody: { offer: ID } }],
  get_products: [byId('get_products_by_id', FIRST)],
  get_orders: [byId('get_orders_by_id', FIRST)],
  get_events: each(['get_events_by_id', 'post_events_by_id_resend'], FIRST),
  post_webhook_endpoints: [...each(ENDPOINT_BY_ID), { operationId: 'get_webhook_endpoints' }],
  get_webhook_endpoints: each(ENDPOINT_BY_ID, FIRST),
  post_webhook_endpoints_by_id_test: each(['get_events_by_id', 'post_events_by_id_resend'], '$response.body#/event'),
  get_subscriptions: each(SUBSCRIPTION_BY_ID, FIRST),
  post_subscriptions_by_id: actionsBack(),
  post_subscriptions_by_id_pause: actionsBack(),
  post_subscriptions_by_id_resume: actionsBack(),
  post_subscriptions_by_id_reactivate: actionsBack(),
  post_subscriptions_by_id_change_offer: actionsBack(),
  delete_subscriptions_by_id: each(['get_subscriptions_by_id', 'post_subscriptions_by_id_reactivate']),
  post_subscriptions_by_id_charges: [
    byId('get_subscription_charges_by_id'),
    byId('get_subscriptions_by_id_charges', '$response.body#/subscription'),
    byId('get_subscriptions_by_id', '$response.body#/subscription'),
  ],
  get_subscriptions_by_id_charges: [byId('get_subscription_charges_by_id', FIRST)],
  post_subscriptions_by_id_usage_items: [
    { operationId: 'delete_subscriptions_by_id_usage_items_by_item_id', parameters: { id: '$response.body#/subscription', itemId: ID } },
    byId('get_subscriptions_by_id_usage_items', '$response.body#/subscription'),
    byId('get_subscriptions_by_id_usage', '$response.body#/subscription'),
  ],
  get_subscriptions_by_id_usage_items: [
    { operationId: 'delete_subscriptions_by_id_usage_items_by_item_id', parameters: { id: '$response.body#/data/0/subscription', itemId: FIRST } },
  ],
  post_billing_meters: [...each(METER_BY_ID), { operationId: 'get_billing_meters', parameters: { status: '$response.body#/status' } }],
  get_billing_meters: each(METER_BY_ID, FIRST),
  post_billing_meter_events: [byId('get_customers_by_id', '$response.body#/customer')],
  post_test_helpers_test_clocks: [...each(CLOCK_BY_ID), { operationId: 'get_test_helpers_test_clocks' }],
  get_test_helpers_test_clocks: each(CLOCK_BY_ID, FIRST),
};

/** Rules the handlers enforce (with the spec's codes), by operation and body field path (`document.number`). */
export const DOCUMENTED_RULES: Record<string, Record<string, Json>> = {
  post_customers: {
    email: { format: 'email', pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$' },
    phone: { pattern: '^\\+?[0-9 ().-]{7,40}$' },
    'document.number': { pattern: '^[0-9A-Za-z][0-9A-Za-z ./-]{0,39}$' },
    'address.country': { pattern: '^[A-Z]{2}$' },
    locale: { pattern: '^[a-z]{2}(-[A-Z]{2})?$' },
    test_clock: { pattern: '^clock_[A-Za-z0-9]+$' },
  },
  post_customers_by_id: {
    email: { format: 'email', pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$' },
    phone: { pattern: '^\\+?[0-9 ().-]{7,40}$' },
    'address.country': { pattern: '^[A-Z]{2}$' },
  },
  post_checkout_sessions: {
    currency: { pattern: '^[a-z]{3}$' },
    customer: { pattern: '^cust_[A-Za-z0-9]+$' },
    customer_email: { format: 'email', pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$' },
    success_url: { format: 'uri', pattern: '^https://' },
    cancel_url: { format: 'uri', pattern: '^https://' },
  },
  post_billing_portal_sessions: { customer: { pattern: '^cust_[A-Za-z0-9]+$' } },
  post_billing_meters: { event_name: { minLength: 1, pattern: '^[a-z0-9_.-]+$' } },
  post_billing_meter_events: { event_name: { minLength: 1, pattern: '^[a-z0-9_.-]+$' }, identifier: { minLength: 1, maxLength: 100 } },
  post_subscriptions_by_id_usage_items: { meter: { pattern: '^mtr_[A-Za-z0-9]+$' }, currency: { pattern: '^[a-z]{3}$' } },
  post_subscriptions_by_id_change_offer: { offer: { pattern: '^ofr_[A-Za-z0-9]+$' } },
  post_subscriptions_by_id_charges: { currency: { pattern: '^[a-z]{3}$' } },
  post_webhook_endpoints: { url: { format: 'uri', pattern: '^https://' } },
  post_webhook_endpoints_by_id: { url: { format: 'uri', pattern: '^https://' } },
};

/** Headers an operation cannot do without (spec: a charge without Idempotency-Key is 400 idempotency_key_required). */
export const REQUIRED_HEADERS: Record<string, string[]> = { post_subscriptions_by_id_charges: ['Idempotency-Key'] };

/** A whole valid body per create, for the document's readers and the examples a fuzzer starts from. */
export const BODY_EXAMPLES: Record<string, Json> = {
  post_customers: {
    email: 'ana@example.com',
    name: 'Ana Souza',
    phone: '+5511987654321',
    document: { type: 'cpf', number: '529.982.247-25' },
    metadata: { crm_id: '42' },
  },
  post_billing_meters: { display_name: 'API calls', event_name: 'api.call', default_aggregation: { formula: 'sum' } },
  post_webhook_endpoints: { url: 'https://hooks.example.com/billing', description: 'Billing events', enabled_events: ['*'] },
};

/** The schema of a body field by its dotted path, through nullable unions (`anyOf`/`type` lists). */
function fieldSchema(schema: Json | undefined, path: string[]): Json | undefined {
  let current = schema;
  for (const name of path) {
    const properties = (current?.properties ?? (current?.anyOf as Json[] | undefined)?.find((s) => s.properties)?.properties) as
      Record<string, Json> | undefined;
    current = properties?.[name];
  }
  return current;
}

/** Adds keywords to a string schema (or the string branch of a nullable union). */
function addRules(schema: Json, rules: Json): void {
  const branches = (schema.anyOf as Json[] | undefined)?.filter((s) => s.type === 'string');
  for (const target of branches?.length ? branches : [schema]) Object.assign(target, rules);
}

function linkObject(link: LinkTo): Json {
  const out: Json = { operationId: link.operationId };
  if (link.parameters) out.parameters = link.parameters;
  if (link.requestBody) out.requestBody = link.requestBody;
  return out;
}

/** Links on every 2xx answer of their source; only to operations the document has. */
function addLinks(operation: Operation, known: Set<string>): void {
  const links = (OPERATION_LINKS[operation.operationId ?? ''] ?? []).filter((l) => known.has(l.operationId));
  if (links.length === 0) return;
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (!/^2\d\d$/.test(status)) continue;
    response.links = Object.fromEntries(links.map((link, i) => [`${link.operationId}_${i}`, linkObject(link)]));
  }
}

/** Writes the rules of DOCUMENTED_RULES and the body example into each body encoding's schema. */
function addDocumentedRules(operation: Operation): void {
  const rules = DOCUMENTED_RULES[operation.operationId ?? ''] ?? {};
  const example = BODY_EXAMPLES[operation.operationId ?? ''];
  for (const media of Object.values(operation.requestBody?.content ?? {})) {
    if (example && media.schema) media.schema.examples = [example];
    for (const [path, keywords] of Object.entries(rules)) {
      const field = fieldSchema(media.schema, path.split('.'));
      if (field) addRules(field, keywords);
    }
  }
}

/** Links and the handlers' rules, added to the generated document. */
export function deepenDocument<D extends DeepenableDocument>(document: D): D {
  const operations = Object.values(document.paths ?? {}).flatMap((methods) => Object.values(methods));
  const known = new Set(operations.map((op) => op.operationId).filter((id): id is string => Boolean(id)));
  for (const operation of operations) {
    addLinks(operation, known);
    addDocumentedRules(operation);
    for (const name of REQUIRED_HEADERS[operation.operationId ?? ''] ?? []) {
      const header = operation.parameters?.find((p) => p.in === 'header' && p.name === name);
      if (header) header.required = true;
    }
  }
  return document;
}
