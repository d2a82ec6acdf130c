// A dependency that does not answer (MongoDB, the Temporal frontend) is the service unavailable for a
// moment: 503 api_error with Retry-After, answered in about two seconds, never a 500 or a long hang.
import { makeGrpcRetryInterceptor, defaultGrpcRetryOptions } from '@temporalio/client';
import { ApiError } from '../domain/errors';

/** How long the API waits for MongoDB to be selectable, and Temporal to connect, before answering 503. */
export const DEPENDENCY_WAIT_MS = 2_000;
const RETRY_AFTER_SECONDS = 5;

const MONGO_OUTAGES = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
]);
/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED: the Temporal frontend is away or too slow. */
const GRPC_OUTAGES = new Set([14, 4]);

function unavailable(what: string): ApiError {
  return new ApiError('service_unavailable', `${what} is unavailable for a moment. Retry after ${RETRY_AFTER_SECONDS} seconds.`, {
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });
}

/** The 503 an error amounts to when it is (or was caused by) a dependency being away; null otherwise. */
export function outageOf(error: unknown): ApiError | null {
  let e = error as { name?: string; code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 8; depth++, e = e.cause as typeof e) {
    if (e.name && MONGO_OUTAGES.has(e.name)) return unavailable('The database');
    if (e.name === 'ConnectionError' || (e.name === 'ServiceError' && GRPC_OUTAGES.has((e.cause as { code?: number } | undefined)?.code ?? -1))) {
      return unavailable('The workflow service');
    }
    if (typeof e.code === 'number' && GRPC_OUTAGES.has(e.code) && 'details' in e) return unavailable('The workflow service');
  }
  return null;
}

/** The API's Temporal calls: a few quick retries (under a second) instead of the default ~30 s, then the 503. */
export function apiTemporalInterceptors() {
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 4 }))];
}
