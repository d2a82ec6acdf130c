// The API as a Fastify plugin tree: conventions first (request context, errors, body parsing,
// auth and rate limits, idempotency, OpenAPI collection), then one route module per resource under /v1.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppDeps } from './context';
import { newRequestId } from '../domain/ids';
import requestContext from './plugins/request-context';
import errors from './plugins/errors';
import bodyParsing, { parseQueryString } from './plugins/body-parsing';
import auth, { authorize } from './plugins/auth';
import rateLimits from './plugins/rate-limits';
import idempotency from './plugins/idempotency';
import openapi from './plugins/openapi';
import { ErrorResponse } from './http-schemas';
import { componentSchemas, routeModules } from './routes';
import healthRoutes from './routes/health';
import pages from './pages';
import stripeEventRoutes from './providers/stripe-events';
import { measureRequests } from './metrics';
import { traceRequests } from './tracing';

import { redactedRequest } from './redact';
import { fastifyTrustProxy } from './client-address';

export async function buildApp(deps: AppDeps, options: FastifyServerOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    genReqId: () => newRequestId(),
    requestIdHeader: false,
    routerOptions: { querystringParser: parseQueryString },
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    ajv: {
      customOptions: {
        // Unknown parameters are refused (parameter_invalid), not silently dropped.
        removeAdditional: false,
        // Form and query values arrive as text; convert them where the schema expects numbers or booleans.
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: false,
      },
    },
    ...options,
    // Whoever configures the log, a request's path is written redacted (sign-in tokens).
    ...(typeof options.logger === 'object' && options.logger !== null
      ? { logger: { ...options.logger, serializers: { req: redactedRequest, ...(options.logger as { serializers?: object }).serializers } } }
      : {}),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('deps', deps);
  if (deps.httpDuration) measureRequests(app, deps.httpDuration);
  if (deps.traced) traceRequests(app);
  app.addSchema(ErrorResponse);
  for (const schema of componentSchemas) app.addSchema(schema);
  await app.register(requestContext);
  await app.register(errors);
  await app.register(bodyParsing);
  // Auth finds the caller, the rate limits count it, then its key is refused or admitted.
  await app.register(auth);
  await app.register(rateLimits);
  await app.register(authorize);
  await app.register(idempotency);
  await app.register(openapi);

  await app.register(
    async (v1) => {
      for (const routes of routeModules) await v1.register(routes);
    },
    { prefix: '/v1' },
  );
  // Hosted checkout and customer portal pages: outside /v1, no API key.
  await app.register(pages);
  // Provider events (Stripe's webhooks): outside /v1, no API key, verified by signature.
  await app.register(stripeEventRoutes);
  await app.register(healthRoutes);
  return app;
}
