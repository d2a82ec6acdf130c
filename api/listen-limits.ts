// The bounds of GET /v1/webhook_endpoints/listen (docs/limits.md): sessions per store and per process,
// how far back a replay may start, how long a session lives and how long a reader may fall behind.

export interface ListenLimits {
  /** Open sessions of one store in one API process. */
  sessionsPerStore: number;
  /** LISTEN_SESSIONS_PER_PROCESS: open sessions of every store together in one API process. */
  sessionsPerProcess: number;
  /** LISTEN_REPLAY_MAX_EVENTS: events a replay (`since`, Last-Event-ID) may have to send. */
  replayMaxEvents: number;
  /** LISTEN_REPLAY_MAX_AGE_MS: how old the event a replay starts after may be. */
  replayMaxAgeMs: number;
  /** LISTEN_SESSION_MAX_MS: a session's whole life; the client resumes with Last-Event-ID. */
  sessionMaxMs: number;
  /** LISTEN_STALL_MS: how long a reader may leave the socket's buffer full before its session ends. */
  stallMs: number;
  /** LISTEN_KEY_CHECK_MS: how often a session re-reads its key and store (revoked, expired, switched off). */
  keyCheckMs: number;
}

function int(value: string | undefined, fallback: number): number {
  const n = value === undefined || value === '' ? NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export function listenLimitsFrom(env: NodeJS.ProcessEnv): ListenLimits {
  return {
    sessionsPerStore: 5,
    sessionsPerProcess: int(env.LISTEN_SESSIONS_PER_PROCESS, 200),
    replayMaxEvents: int(env.LISTEN_REPLAY_MAX_EVENTS, 1000),
    replayMaxAgeMs: int(env.LISTEN_REPLAY_MAX_AGE_MS, 24 * 3_600_000),
    sessionMaxMs: int(env.LISTEN_SESSION_MAX_MS, 3_600_000),
    stallMs: int(env.LISTEN_STALL_MS, 30_000),
    keyCheckMs: int(env.LISTEN_KEY_CHECK_MS, 2_000),
  };
}
