// /v1/billing/meter_events and /batch: usage events in. One call answers 201 for a new event and
// 200 with the stored event for a repeated identifier; a batch (1 to 100) answers per item and is
// 200 when any item got in, 400 (with the per-item results inside the error) when none did.
// This module also runs the API process's recovery of ingestion journals left behind.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../domain/errors';
import { BATCH_MAX, IDENTIFIER_MAX } from '../../domain/meter-events';
import { ingestMeterEvents, recoverUsageJournals, type IngestResult } from '../../services/usage/ingestion';
import { authOf, eventRequestOf } from '../context';
import { Nullable } from '../../resources/common';
import { withErrors } from '../http-schemas';

// Types are checked by the ingestion rules (invalid_payload for payload values), not here.
const EventBody = Type.Object(
  {
    event_name: Type.String({ description: "The meter's event_name." }),
    identifier: Type.Optional(Type.String({ minLength: 1, maxLength: IDENTIFIER_MAX, description: 'Idempotency per meter; generated when absent.' })),
    // Any value reaches the ingestion rules, so a non-object is invalid_payload here as in the batch.
    payload: Type.Unknown({ description: 'An object of up to 20 keys of text, numbers or booleans: the customer key and the value key.' }),
    timestamp: Type.Optional(Type.Integer({ description: 'Unix seconds; up to 35 days back and 5 minutes ahead; default arrival time.' })),
  },
  { additionalProperties: false },
);

const BatchBody = Type.Object(
  {
    events: Type.Array(Type.Unknown(), { minItems: 1, maxItems: BATCH_MAX, description: `1 to ${BATCH_MAX} events shaped like the single call.` }),
  },
  { additionalProperties: false },
);

const BatchResult = Type.Object({
  status: Type.Union([Type.Literal('accepted'), Type.Literal('duplicate'), Type.Literal('error')]),
  id: Type.Optional(Type.String({ description: 'The event (accepted or duplicate).' })),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), param: Nullable(Type.String()) })),
});

const BatchResponse = Type.Object({
  object: Type.Literal('billing.meter_event_batch'),
  accepted: Type.Integer(),
  duplicates: Type.Integer(),
  errors: Type.Integer(),
  results: Type.Array(BatchResult),
});

const JOURNAL_SWEEP_EVERY_MS = 15_000;

function batchResultOf(result: IngestResult) {
  if (result.status === 'error') {
    return { status: 'error' as const, error: { code: result.error.code, message: result.error.message, param: result.error.param } };
  }
  return { status: result.status, id: result.id };
}

const meterEventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config, temporal } = app.deps;
  const deps = { db, temporal, taskQueue: config.taskQueue, config };

  app.post(
    '/billing/meter_events',
    {
      schema: {
        tags: ['billing.meter_events'],
        summary: 'Report one usage event (201 new, 200 for a repeated identifier)',
        body: EventBody,
        response: withErrors({ 200: Type.Ref('BillingMeterEvent'), 201: Type.Ref('BillingMeterEvent') }),
      },
    },
    async (request, reply) => {
      const { store } = authOf(request);
      const [result] = await ingestMeterEvents(deps, store._id, [request.body], { request: eventRequestOf(request) });
      if (result.status === 'error') throw result.error;
      if (!result.event) throw new Error(`stored event ${result.id} not found`);
      reply.status(result.status === 'accepted' ? 201 : 200);
      return result.event;
    },
  );

  app.post(
    '/billing/meter_events/batch',
    {
      schema: {
        tags: ['billing.meter_events'],
        summary: 'Report 1 to 100 usage events, each accepted or refused on its own',
        body: BatchBody,
        response: withErrors({ 200: BatchResponse }),
      },
    },
    async (request) => {
      const { store } = authOf(request);
      // Batch results carry ids only: duplicates need no read of the stored events.
      const results = await ingestMeterEvents(deps, store._id, request.body.events, { request: eventRequestOf(request), storedDuplicates: false });
      const accepted = results.filter((r) => r.status === 'accepted').length;
      const duplicates = results.filter((r) => r.status === 'duplicate').length;
      const body = {
        object: 'billing.meter_event_batch' as const,
        accepted,
        duplicates,
        errors: results.length - accepted - duplicates,
        results: results.map(batchResultOf),
      };
      if (accepted + duplicates === 0) {
        const codes = new Set(results.map((r) => (r.status === 'error' ? r.error.code : '')));
        const code = codes.size === 1 ? [...codes][0] : 'parameter_invalid';
        throw new ApiError(code, `None of the ${results.length} events was accepted; see results for each one.`, {
          param: 'events',
          status: code === 'resource_missing' ? 400 : undefined,
          extra: { accepted: 0, duplicates: 0, errors: body.errors, results: body.results },
        });
      }
      return body;
    },
  );

  // Journals a crashed or failed ingestion left behind are replayed by the process that ingests.
  const sweeper = setInterval(() => {
    recoverUsageJournals(db).catch((err: unknown) => app.log.warn({ err }, 'usage journal recovery failed'));
  }, JOURNAL_SWEEP_EVERY_MS);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));
};

export default meterEventRoutes;
