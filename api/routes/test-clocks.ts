// /v1/test_helpers/test_clocks (an extension outside the spec's paths): create, list, retrieve, advance
// and delete a store's test clocks. Customers attach at creation (`test_clock` on POST /v1/customers).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { advanceTestClock, createTestClock, deleteTestClock } from '../../services/test-clocks';
import { listTestClocks, requireTestClock, type TestClockDoc } from '../../store/test-clocks';
import { authOf, type RouteApp } from '../context';
import { listEnvelope, paginate, PaginationQuery } from '../pagination';
import { Nullable } from '../../resources/common';
import { IdParams, NoQuery, withErrors } from '../http-schemas';
import { testClockObject } from '../../resources/test-clock';

const TAGS = ['test_helpers'];
// Years 2000 to 2100: wide enough for any test, narrow enough for calendar arithmetic.
const FrozenTime = Type.Integer({ minimum: 946_684_800, maximum: 4_102_444_800, description: 'Unix seconds.' });

const CreateBody = Type.Object(
  { frozen_time: FrozenTime, name: Type.Optional(Nullable(Type.String({ maxLength: 120, description: 'Up to 120 characters.' }))) },
  { additionalProperties: false },
);

const AdvanceBody = Type.Object(
  {
    frozen_time: Type.Integer({
      ...FrozenTime,
      description:
        "Unix seconds, later than the clock's; at most two cycles of its customers' shortest billing cycle ahead (two months without subscriptions).",
    }),
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object({ ...PaginationQuery }, { additionalProperties: false });
const Deleted = Type.Object({ id: Type.String(), object: Type.Literal('test_clock'), deleted: Type.Literal(true) });
const ClockRef = Type.Ref('TestClock');

const testClockRoutes: FastifyPluginAsyncTypebox = async (app) => {
  createAndReadRoutes(app);
  advanceRoute(app);
  deleteRoute(app);
};

function clockDeps(app: RouteApp) {
  const { db, temporal, provider, testProvider } = app.deps;
  return { db, temporal, taskQueue: app.deps.config.taskQueue, provider, testProvider };
}

function createAndReadRoutes(app: RouteApp): void {
  const { db } = app.deps;
  app.post(
    '/test_helpers/test_clocks',
    { schema: { tags: TAGS, summary: 'Create a test clock', body: CreateBody, response: withErrors({ 201: ClockRef }) } },
    async (request, reply) => {
      const { store } = authOf(request);
      const doc = await createTestClock(clockDeps(app), store._id, request.body.frozen_time, request.body.name ?? null);
      reply.status(201);
      return testClockObject(doc);
    },
  );

  app.get(
    '/test_helpers/test_clocks',
    { schema: { tags: TAGS, summary: 'List test clocks', querystring: ListQuery, response: withErrors({ 200: listEnvelope(ClockRef) }) } },
    async (request) => {
      const storeId = authOf(request).store._id;
      return paginate((window) => listTestClocks(db, storeId, window), {
        query: request.query,
        url: '/v1/test_helpers/test_clocks',
        toApi: (doc: TestClockDoc) => testClockObject(doc),
      });
    },
  );

  app.get(
    '/test_helpers/test_clocks/:id',
    { schema: { tags: TAGS, summary: 'Retrieve a test clock', params: IdParams, querystring: NoQuery, response: withErrors({ 200: ClockRef }) } },
    async (request) => testClockObject(await requireTestClock(db, authOf(request).store._id, request.params.id)),
  );
}

/** POST advance: 200 with status advancing; ready (and its event) once everything attached caught up. */
function advanceRoute(app: RouteApp): void {
  app.post(
    '/test_helpers/test_clocks/:id/advance',
    {
      schema: {
        tags: TAGS,
        summary: "Advance a test clock: its customers' subscriptions, usage and checkout sessions live through the time in order",
        params: IdParams,
        body: AdvanceBody,
        response: withErrors({ 200: ClockRef }),
      },
    },
    async (request) =>
      testClockObject(await advanceTestClock(clockDeps(app), authOf(request).store._id, request.params.id, request.body.frozen_time)),
  );
}

/** DELETE: the clock's workflows end, its customers, subscriptions and checkout sessions are deleted. */
function deleteRoute(app: RouteApp): void {
  app.delete(
    '/test_helpers/test_clocks/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a test clock with its customers, their subscriptions and checkout sessions (their workflows ended)',
        params: IdParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (request) => {
      await deleteTestClock(clockDeps(app), authOf(request).store._id, request.params.id);
      return { id: request.params.id, object: 'test_clock' as const, deleted: true as const };
    },
  );
}

export default testClockRoutes;
