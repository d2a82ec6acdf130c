// Fixed-window rate limits shared by every API process through MongoDB. FerretDB v1 (SQLite) does not
// apply $inc or findOneAndUpdate atomically (FerretDB issue #3040: the update is not done in a
// transaction, so concurrent increments are lost), and a unique-key insert is the only atomic write
// there. So each allowed request claims one numbered slot document (`<subject>|<window>|<n>`, n = 1..limit)
// by inserting it: two processes can never both hold slot n, hence never more than `limit` requests
// per window in total. Each process remembers the next slot to try, so in the common case a request
// costs one insert; a collision with another process finds the first unclaimed slot after it by
// lookups of single slot ids (galloping, then bisecting: FerretDB serves only `_id` lookups from an
// index) and jumps there. Slots are claimed contiguously from 1 (a jump lands right after a claimed
// slot), so once a process's next slot is beyond the limit it refuses without a round trip until the
// window ends.
import type { Db } from 'mongodb';
import { collections, registerIndexes } from './collections';

export interface WindowHit {
  allowed: boolean;
  /** Requests counted in this window including this one (limit + 1 once refused). */
  count: number;
  remaining: number;
  /** Unix seconds when the window ends. */
  resetAt: number;
}

const SLOT_DIGITS = 7;

function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
}

registerIndexes((db) => collections(db).rateCounters.createIndex({ expires_at: 1 }));

export class SharedRateWindows {
  /** Per subject: the window being counted and the next slot this process will try to claim. */
  private readonly next = new Map<string, { windowIndex: number; windowEnd: number; slot: number }>();

  constructor(private readonly db: Db) {}

  async hit(subject: string, limit: number, windowMs: number, now = Date.now()): Promise<WindowHit> {
    const windowIndex = Math.floor(now / windowMs);
    const windowEnd = (windowIndex + 1) * windowMs;
    const resetAt = Math.ceil(windowEnd / 1000);
    const prefix = `${subject}|${windowIndex}|`;
    let state = this.next.get(subject);
    if (!state || state.windowIndex !== windowIndex) {
      state = { windowIndex, windowEnd, slot: 1 };
      this.next.set(subject, state);
    }
    const { rateCounters } = collections(this.db);
    for (;;) {
      if (state.slot > limit) return { allowed: false, count: limit + 1, remaining: 0, resetAt };
      const slot = state.slot++;
      try {
        await rateCounters.insertOne({ _id: `${prefix}${String(slot).padStart(SLOT_DIGITS, '0')}`, count: slot, expires_at: windowEnd });
        return { allowed: true, count: slot, remaining: Math.max(0, limit - slot), resetAt };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      // Another process holds this slot: continue at the first one after it that nobody holds.
      state.slot = Math.max(state.slot, await this.firstFreeAfter(prefix, slot, limit));
    }
  }

  private async firstFreeAfter(prefix: string, taken: number, limit: number): Promise<number> {
    const { rateCounters } = collections(this.db);
    const held = async (slot: number) =>
      (await rateCounters.findOne({ _id: `${prefix}${String(slot).padStart(SLOT_DIGITS, '0')}` }, { projection: { _id: 1 } })) !== null;
    let low = taken;
    let step = 1;
    for (;;) {
      const probe = Math.min(taken + step, limit);
      if (probe <= low) return limit + 1;
      if (!(await held(probe))) {
        let high = probe;
        while (high - low > 1) {
          const mid = Math.floor((low + high) / 2);
          if (await held(mid)) low = mid;
          else high = mid;
        }
        return high;
      }
      low = probe;
      if (probe === limit) return limit + 1;
      step *= 2;
    }
  }

  /** Forgets windows that have ended (the map would otherwise grow with every client address). */
  prune(now = Date.now()): void {
    for (const [subject, state] of this.next) {
      if (state.windowEnd <= now) this.next.delete(subject);
    }
  }
}

export async function sweepExpiredWindows(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).rateCounters.deleteMany({ expires_at: { $lt: now } });
  return result.deletedCount;
}
