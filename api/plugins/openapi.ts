// Collects the TypeBox schemas every route declares into an OpenAPI 3.1 document at /v1/openapi.json.
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';

export default fp(async function openapiPlugin(app: FastifyInstance) {
  const { config } = app.deps;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Billing and Checkout API',
        version: '2026-11-01',
        description: 'Store-scoped billing API with hosted checkout. Authenticate with `Authorization: Bearer vk_live_...`.',
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
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  app.get('/v1/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
});
