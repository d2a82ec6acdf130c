// Health for load balancers and operators, without a key and outside the rate limits: /healthz says
// the process is alive; /readyz that MongoDB and Temporal both answer within 2 s (503 naming what did not).
// Temporal answers when its namespace can be described: a frontend just started accepts connections but
// still refuses requests for a moment, so a reachable server is not yet a ready one.
import type { FastifyInstance } from 'fastify';

const READY_WITHIN_MS = 2_000;

/** The probe's own outcome: null when it answered in time, else why not. */
async function probe(check: () => Promise<unknown>): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${READY_WITHIN_MS} ms`), READY_WITHIN_MS);
  });
  try {
    return await Promise.race([check().then(() => null), late]);
  } catch (error) {
    return error instanceof Error ? error.message.slice(0, 200) : String(error);
  } finally {
    clearTimeout(timer);
  }
}

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  const { db, temporal } = app.deps;
  const config = { public: true };
  app.get('/healthz', { config, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config, schema: { hide: true } }, async (_request, reply) => {
    const [mongodb, temporalProblem] = await Promise.all([
      probe(() => db.command({ ping: 1 })),
      probe(() => temporal.workflowService.describeNamespace({ namespace: temporal.options.namespace })),
    ]);
    const checks = { mongodb: mongodb ?? 'ok', temporal: temporalProblem ?? 'ok' };
    const ready = mongodb === null && temporalProblem === null;
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
  });
}
