// Fixed-window rate limits shared by every API process through MongoDB: one counter document per
// (subject, window index), whose slots processes claim with atomic upserting `$inc`s, so never more
// than `limit` requests pass per window however many processes serve the subject. A counter carries
// its window's end as a Date for the TTL index (and the sweep where that index is unavailable).
import type { Db } from 'mongodb';
import { collections } from './collections';
import { retryOnDuplicateKey } from './insert-once';

export interface WindowHit {
  allowed: boolean;
  /** The window's count as far as this process knows, including this request. */
  count: number;
  /** Requests the window still lets through as far as this process knows. */
  remaining: number;
  /** Unix seconds when the window ends. */
  resetAt: number;
}

/** Slots per batch claim: exact (1) for small limits, 20 claims a window otherwise. */
export function blockSizeFor(limit: number): number {
  return Math.max(1, Math.floor(limit / 20));
}

/** Adds `n` to a window's counter, creating it on first use; the count after the addition. */
async function addToWindow(db: Db, id: string, n: number, expiresAt: Date): Promise<number> {
  const add = () =>
    collections(db).rateCounters.findOneAndUpdate(
      { _id: id },
      { $inc: { count: n }, $setOnInsert: { expires_at: expiresAt } },
      { upsert: true, returnDocument: 'after' },
    );
  // Two upserts racing to create the document: the loser retries once and then finds it.
  const doc = await retryOnDuplicateKey(add);
  return doc!.count;
}

interface WindowState {
  windowIndex: number;
  windowEnd: number;
  /** The window's count after this process's last claim (its own unused slots included). */
  count: number;
  /** Slots this process claimed and has not used yet. */
  free: number;
  /** Requests in this process waiting for a slot. */
  waiting: number;
  /** The claim on its way to the database: one at a time per subject. */
  claim: Promise<void> | null;
}

/** Subjects (addresses, keys) whose window one process remembers; beyond it the least recently used are forgotten. */
export const MAX_WINDOW_SUBJECTS = 10_000;

/**
 * Claims slots in batches (one `$inc` for a batch or for everyone waiting) and serves them from
 * memory; a batch that overshoots the limit gets only the slots still free, so the total stays exact.
 * Slots a process holds unused when its requests stop are lost to the others (under one batch).
 * At most `maxSubjects` windows are kept: forgetting one loses only its unused slots, since its count
 * is in the database, so memory does not grow with the number of client addresses.
 */
export class SharedRateWindows {
  private readonly windows = new Map<string, WindowState>();

  constructor(
    private readonly db: Db,
    private readonly maxSubjects = MAX_WINDOW_SUBJECTS,
  ) {}

  /** Windows held in memory (at most maxSubjects). */
  get size(): number {
    return this.windows.size;
  }

  async hit(subject: string, limit: number, windowMs: number, now = Date.now()): Promise<WindowHit> {
    const s = this.stateOf(subject, Math.floor(now / windowMs), windowMs, now);
    const resetAt = Math.ceil(s.windowEnd / 1000);
    s.waiting += 1;
    try {
      for (;;) {
        if (s.free > 0) {
          s.free -= 1;
          return { allowed: true, count: s.count - s.free, remaining: s.free + Math.max(0, limit - s.count), resetAt };
        }
        // Counts only grow within a window: once full it is refused here without a round trip.
        if (!s.claim && s.count >= limit) return { allowed: false, count: s.count + 1, remaining: 0, resetAt };
        s.claim ??= this.claim(subject, s, limit).finally(() => (s.claim = null));
        await s.claim;
      }
    } finally {
      s.waiting -= 1;
    }
  }

  private stateOf(subject: string, windowIndex: number, windowMs: number, now: number): WindowState {
    const known = this.windows.get(subject);
    // Re-inserted on every use: the map's order is then least recently used first.
    this.windows.delete(subject);
    if (known?.windowIndex === windowIndex) {
      this.windows.set(subject, known);
      return known;
    }
    const state = { windowIndex, windowEnd: (windowIndex + 1) * windowMs, count: 0, free: 0, waiting: 0, claim: null };
    this.windows.set(subject, state);
    if (this.windows.size > this.maxSubjects) this.shrink(now);
    return state;
  }

  /** Past the bound: ended windows go, then the least recently used, down to 90% so this runs once per 10% of new subjects. */
  private shrink(now: number): void {
    this.prune(now);
    const target = Math.max(1, Math.floor(this.maxSubjects * 0.9));
    for (const subject of this.windows.keys()) {
      if (this.windows.size <= target) break;
      this.windows.delete(subject);
    }
  }

  private async claim(subject: string, s: WindowState, limit: number): Promise<void> {
    const n = Math.min(limit - s.count, Math.max(blockSizeFor(limit), s.waiting));
    const count = await addToWindow(this.db, `${subject}|${s.windowIndex}`, n, new Date(s.windowEnd));
    s.count = Math.max(s.count, count);
    // `count - n` were taken before this claim: only the slots still free up to the limit are ours.
    s.free += Math.max(0, Math.min(n, limit - (count - n)));
  }

  /** Forgets windows that have ended (the map would otherwise grow with every client address). */
  prune(now = Date.now()): void {
    for (const [subject, state] of this.windows) {
      if (state.windowEnd <= now) this.windows.delete(subject);
    }
  }
}

export async function sweepExpiredWindows(db: Db, now = Date.now()): Promise<number> {
  // Numeric expiry: slot documents of the block scheme this layout replaced.
  const result = await collections(db).rateCounters.deleteMany({
    $or: [{ expires_at: { $lt: new Date(now) } }, { expires_at: { $not: { $type: 'date' } } }],
  });
  return result.deletedCount;
}
