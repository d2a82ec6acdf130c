// /v1/openapi.json (OpenAPI 3.1, generated from the routes' TypeBox schemas) and /v1/postman.json
// converted from it. A transform adds what every /v1 route shares (both body encodings, Idempotency-Key
// and Service-Version headers, every error status), so new route modules are described completely;
// hosted pages stay out; then links and the handlers' rules (openapi-depth.ts). Both are built once, on first request.
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import { Type, type TSchema } from '@sinclair/typebox';
import { convertV2 } from 'openapi-to-postmanv2';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { API_VERSIONS } from '../../domain/api-keys';
import { IDEMPOTENCY_KEY_MAX } from './idempotency';
import { deepenDocument, type DeepenableDocument } from '../openapi-depth';

/** Error statuses every /v1 route can answer, with what each means. */
export const ERROR_RESPONSES: Record<string, string> = {
  400: 'Invalid request: a missing or invalid parameter, a malformed body, an unknown version or an Idempotency-Key problem.',
  401: 'No API key, or an invalid, revoked or expired one.',
  403: 'The key lacks the scope, or the API is off or the store inactive.',
  404: 'No such object, or no such path.',
  409: 'A request with this Idempotency-Key is still running.',
  429: 'Rate limit reached; see Retry-After.',
  500: 'Failure on the service side; keep the Request-Id and retry.',
};

const SUCCESS_DESCRIPTIONS: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' };

interface RouteSchema {
  hide?: boolean;
  body?: unknown;
  consumes?: string[];
  headers?: TSchema;
  response?: Record<string, TSchema & { description?: string }>;
  security?: unknown[];
  operationId?: string;
  [key: string]: unknown;
}

function operationId(method: string, url: string): string {
  const path = url
    .replace(/^\/v1\//, '')
    .replace(/:([A-Za-z_]+)/g, 'by_$1')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
  return `${method.toLowerCase()}_${path || 'root'}`;
}

/** What every /v1 operation shares, added to the route's own schema for the document only. */
export function describeRoute(schema: RouteSchema | undefined, url: string, route: RouteOptions): RouteSchema {
  if (!url.startsWith('/v1/')) return { ...(schema ?? {}), hide: true };
  const out: RouteSchema = { ...(schema ?? {}) };
  if (out.hide) return out;
  const method = String(Array.isArray(route.method) ? route.method[0] : route.method);
  out.operationId ??= operationId(method, url);
  if (out.body !== undefined) out.consumes ??= ['application/json', 'application/x-www-form-urlencoded'];

  const isPublic = Boolean(route.config && (route.config as { public?: boolean }).public);
  if (isPublic) {
    out.security = [];
  } else if (!out.headers) {
    const headers: Record<string, TSchema> = {
      'Service-Version': Type.Optional(
        Type.String({ enum: [...API_VERSIONS], description: "API version of this call; defaults to the key's pinned version." }),
      ),
    };
    if (method === 'POST' || method === 'DELETE') {
      headers['Idempotency-Key'] = Type.Optional(
        Type.String({ minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX, description: 'Replays the first response for 24 hours.' }),
      );
    }
    out.headers = Type.Object(headers);
  }

  const responses: Record<string, TSchema & { description?: string }> = {};
  for (const [status, response] of Object.entries(out.response ?? {})) {
    responses[status] = response.description
      ? response
      : { ...response, description: SUCCESS_DESCRIPTIONS[status] ?? ERROR_RESPONSES[status] ?? 'Response' };
  }
  for (const [status, description] of Object.entries(ERROR_RESPONSES)) {
    if (isPublic && status !== '429' && status !== '500') continue;
    // Every error answers the one Error object, so the component is referenced, never copied.
    responses[status] = { ...Type.Ref('Error'), description };
  }
  out.response = responses;
  return out;
}

type OpenApiDocument = {
  paths?: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; schema?: { type?: unknown }; style?: string; explode?: boolean }[];
        requestBody?: {
          content?: Record<string, { schema?: { properties?: Record<string, { type?: unknown }> }; encoding?: Record<string, unknown> }>;
        };
      }
    >
  >;
};

const isObjectSchema = (schema: { type?: unknown } | undefined) =>
  schema?.type === 'object' || (Array.isArray(schema?.type) && schema.type.includes('object')) || schema?.type === 'array';

/** Nested parameters use bracket notation (`created[gte]=1`, `document[type]=cpf`): OpenAPI's deepObject style. */
export function declareBracketNotation(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && isObjectSchema(parameter.schema) && (parameter.schema as { type?: unknown }).type !== 'array') {
          parameter.style = 'deepObject';
          parameter.explode = true;
        }
      }
      const form = operation.requestBody?.content?.['application/x-www-form-urlencoded'];
      const properties = form?.schema?.properties ?? {};
      const encoding: Record<string, unknown> = {};
      for (const [name, schema] of Object.entries(properties)) {
        if (isObjectSchema(schema) || 'anyOf' in (schema as object)) encoding[name] = { style: 'deepObject', explode: true };
      }
      if (form && Object.keys(encoding).length > 0) form.encoding = encoding;
    }
  }
  return document;
}

function toPostman(openapi: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    convertV2(
      { type: 'json', data: openapi as object },
      { folderStrategy: 'Tags', parametersResolution: 'Example', includeAuthInfoInExample: true },
      (error, result) => {
        if (error) return reject(error);
        const output = result?.output?.[0];
        if (!result?.result || !output) return reject(new Error(`OpenAPI to Postman conversion failed: ${result?.reason}`));
        resolve(output.data);
      },
    );
  });
}

export default fp(async function openapiPlugin(app: FastifyInstance) {
  const { config } = app.deps;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Billing and Checkout API',
        version: API_VERSIONS[API_VERSIONS.length - 1],
        description:
          'Store-scoped billing API with hosted checkout. Authenticate with `Authorization: Bearer vk_live_...` ' +
          '(or HTTP Basic with the key as user and an empty password). Bodies are JSON or form-encoded with bracket notation.',
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer' },
          basicAuth: { type: 'http', scheme: 'basic' },
        },
      },
      security: [{ bearerAuth: [] }, { basicAuth: [] }],
    },
    transform: ({ schema, url, route }) => ({ schema: describeRoute(schema as RouteSchema, url, route) as never, url }),
    transformObject: (documentObject) =>
      deepenDocument(declareBracketNotation((documentObject as { openapiObject: OpenApiDocument }).openapiObject) as DeepenableDocument) as never,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  const documentSchema = { hide: true };
  // @fastify/swagger builds the document once and keeps it; the collection is converted once too.
  let postman: Promise<unknown> | null = null;

  app.get('/v1/openapi.json', { config: { public: true }, schema: documentSchema }, async () => app.swagger());
  app.get('/v1/postman.json', { config: { public: true }, schema: documentSchema }, async () => {
    postman ??= toPostman(app.swagger()).catch((error) => {
      postman = null;
      throw error;
    });
    return postman;
  });
});
