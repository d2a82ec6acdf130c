// Request bodies: JSON objects or form-encoded bracket notation (parsed by qs, the same parser
// the query string uses). Anything else is refused with parameter_invalid by the error handler.
// JSON goes through secure-json-parse, Fastify's own parser, so `__proto__` and `constructor.prototype`
// keys are refused instead of reaching handlers that copy or merge the body (qs drops them itself).
import fp from 'fastify-plugin';
import qs from 'qs';
import secureJson from 'secure-json-parse';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors';
import { hooksOf } from '../route-hooks';

export const QS_OPTIONS: qs.IParseOptions = { depth: 6, arrayLimit: 100, parameterLimit: 2000, allowDots: false };

/** Form values are all text; an empty value means "unset", as with Stripe-style APIs. */
function emptyToNull(value: unknown): unknown {
  if (value === '') return null;
  if (Array.isArray(value)) return value.map(emptyToNull);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, emptyToNull(v)]));
  }
  return value;
}

interface BodySchema {
  type?: string | string[];
  properties?: Record<string, BodySchema>;
  required?: string[];
  items?: BodySchema;
  anyOf?: BodySchema[];
}

const allowsNull = (schema: BodySchema): boolean =>
  schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null')) || Boolean(schema.anyOf?.some(allowsNull));

/**
 * The first required param sent as null (JSON null, or an empty form value) where the schema does not
 * take null, as the spec writes params ("document.type", "lines[0].amount"); null when there is none.
 * Validation alone would coerce it to 0 or "" and answer about the wrong thing.
 */
export function requiredNullParam(schema: BodySchema | undefined, value: unknown, path = ''): string | null {
  if (!schema || value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    if (!schema.items) return null;
    for (const [index, item] of value.entries()) {
      const found = requiredNullParam(schema.items, item, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    const param = path ? `${path}.${key}` : key;
    const field = (value as Record<string, unknown>)[key];
    if (field === null && schema.required?.includes(key) && !allowsNull(property)) return param;
    const found = requiredNullParam(property, field, param);
    if (found) return found;
  }
  return null;
}

/**
 * Removes the optional params sent as null where the schema does not take null: such a null means "not
 * sent", as an empty form value does, so defaults apply and a param required only in some cases
 * (offer without line_items, unit_amount without tiers) is reported missing by its rule, instead of
 * validation coercing the null into 0, false or "" (redirect_delay 0, unit_amount 0). Array items are
 * left to validation: removing one would renumber the rest.
 */
export function unsetOptionalNulls(schema: BodySchema | undefined, value: unknown): void {
  if (!schema || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) unsetOptionalNulls(schema.items, item);
    return;
  }
  const record = value as Record<string, unknown>;
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (record[key] === null && !schema.required?.includes(key) && !allowsNull(property)) delete record[key];
    else unsetOptionalNulls(property, record[key]);
  }
}

export function parseQueryString(text: string): Record<string, unknown> {
  return qs.parse(text, QS_OPTIONS) as Record<string, unknown>;
}

export default fp(async function bodyParsingPlugin(app: FastifyInstance) {
  app.removeContentTypeParser(['application/json', 'text/plain']);

  // A POST or DELETE without a body is an empty set of parameters (an update that changes nothing,
  // a delete), not a malformed request.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined && (request.method === 'POST' || request.method === 'DELETE')) request.body = {};
    done();
  });

  // Last before validation (after a route's own preValidation, which may answer first), on every route
  // with a body: a null is never coerced; required, it is missing; optional, it is not sent.
  const refuseRequiredNulls = async (request: FastifyRequest) => {
    const schema = request.routeOptions.schema?.body as BodySchema | undefined;
    const param = requiredNullParam(schema, request.body);
    if (param) throw new ApiError('parameter_missing', `Missing required param: ${param}.`, { param });
    unsetOptionalNulls(schema, request.body);
  };
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return;
    route.preValidation = [...hooksOf(route.preValidation), refuseRequiredNulls];
  });

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, {});
    let parsed: unknown;
    try {
      parsed = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (error) {
      const forbidden = error instanceof SyntaxError && error.message.includes('forbidden prototype property');
      const message = forbidden
        ? 'The JSON request body may not contain "__proto__" or "constructor.prototype" keys.'
        : 'The request body is not valid JSON.';
      return done(new ApiError('parameter_invalid', message), undefined);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return done(new ApiError('parameter_invalid', 'The JSON request body must be an object.'), undefined);
    }
    done(null, parsed);
  });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, emptyToNull(qs.parse(body as string, QS_OPTIONS)));
    } catch {
      done(new ApiError('parameter_invalid', 'The form-encoded request body could not be parsed.'), undefined);
    }
  });
});
