// Fixed-window rate limits shared by every API process through MongoDB. FerretDB v1 (SQLite) does not
// apply $inc or findOneAndUpdate atomically (FerretDB issue #3040: the update is not done in a
// transaction, so concurrent increments are lost), and a unique-key insert is the only atomic write
// there. So a window's `limit` requests are cut into numbered blocks of slots (one slot per request;
// blocks of 1 slot for small limits, `limit / 20` slots for larger ones), and a process claims a block
// by inserting a document named `<subject>|<window>|<block>`: two processes can never hold the same
// block, so never more than `limit` requests pass per window in total, whatever the number of
// processes. A process serves the slots of the blocks it holds from memory, so a busy key costs one
// insert per block rather than one per request.
// The price of blocks: slots a process holds but does not use by the end of the window are lost to
// the others, so a key hammered through several processes at once may get up to (block - 1) fewer
// requests per process than the limit; never more. With one process, or small limits, it is exact.
// A process remembers the next block to claim; on a collision it finds the first block nobody holds by
// lookups of single ids (galloping, then bisecting: FerretDB serves only `_id` lookups from an index).
// Blocks are claimed contiguously from 0, so once a process's next block is past the last one it
// refuses without a round trip until the window ends.
import type { Db } from 'mongodb';
import { collections, registerIndexes } from './collections';

export interface WindowHit {
  allowed: boolean;
  /** Requests this process has counted in the window, including this one. */
  count: number;
  /** Slots not yet used as far as this process knows (its own unused ones and unclaimed blocks). */
  remaining: number;
  /** Unix seconds when the window ends. */
  resetAt: number;
}

const ID_DIGITS = 7;

/** Slots per block: exact (1) for small limits, 20 blocks a window otherwise. */
export function blockSizeFor(limit: number): number {
  return Math.max(1, Math.floor(limit / 20));
}

function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: number }).code === 11000;
}

registerIndexes((db) => collections(db).rateCounters.createIndex({ expires_at: 1 }));

interface WindowState {
  windowIndex: number;
  windowEnd: number;
  /** Next block index this process will try to claim. */
  nextBlock: number;
  /** Slots of claimed blocks not used yet. */
  free: number;
  /** Requests this process let through in the window. */
  served: number;
  /** Requests waiting here for a slot, and block claims on their way to the database. */
  waiting: number;
  claiming: number;
  /** Settles whenever a claim finishes, so waiting requests look again. */
  changed: Promise<void>;
  notify: () => void;
}

function signal(): { changed: Promise<void>; notify: () => void } {
  let notify!: () => void;
  const changed = new Promise<void>((resolve) => (notify = resolve));
  return { changed, notify };
}

export class SharedRateWindows {
  private readonly windows = new Map<string, WindowState>();

  constructor(private readonly db: Db) {}

  async hit(subject: string, limit: number, windowMs: number, now = Date.now()): Promise<WindowHit> {
    const windowIndex = Math.floor(now / windowMs);
    const windowEnd = (windowIndex + 1) * windowMs;
    const resetAt = Math.ceil(windowEnd / 1000);
    const prefix = `${subject}|${windowIndex}|`;
    const block = blockSizeFor(limit);
    const blocks = Math.ceil(limit / block);
    let state = this.windows.get(subject);
    if (!state || state.windowIndex !== windowIndex) {
      state = { windowIndex, windowEnd, nextBlock: 0, free: 0, served: 0, waiting: 0, claiming: 0, ...signal() };
      this.windows.set(subject, state);
    }
    const s = state;
    const take = (): WindowHit => {
      s.free -= 1;
      s.served += 1;
      const unclaimed = Math.max(0, limit - s.nextBlock * block);
      return { allowed: true, count: s.served, remaining: s.free + unclaimed, resetAt };
    };
    s.waiting += 1;
    try {
      for (;;) {
        if (s.free > 0) return take();
        // Claims already on their way bring enough slots for everyone waiting: wait for them rather
        // than claim more (and hold slots the other processes could have used).
        if (s.claiming > 0 && (s.claiming * block >= s.waiting || s.nextBlock >= blocks)) {
          await s.changed;
          continue;
        }
        if (s.nextBlock >= blocks) return { allowed: false, count: s.served + 1, remaining: 0, resetAt };
        await this.claim(s, prefix, block, blocks, limit);
      }
    } finally {
      s.waiting -= 1;
    }
  }

  private async claim(s: WindowState, prefix: string, block: number, blocks: number, limit: number): Promise<void> {
    const index = s.nextBlock++;
    s.claiming += 1;
    try {
      await collections(this.db).rateCounters.insertOne({
        _id: `${prefix}${String(index).padStart(ID_DIGITS, '0')}`,
        count: index,
        expires_at: s.windowEnd,
      });
      s.free += Math.min(block, limit - index * block);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Another process holds this block: continue at the first one after it that nobody holds.
      s.nextBlock = Math.max(s.nextBlock, await this.firstFreeAfter(prefix, index, blocks - 1));
    } finally {
      s.claiming -= 1;
      const { notify } = s;
      Object.assign(s, signal());
      notify();
    }
  }

  /** The first block index after `taken` nobody holds, or `last + 1` when all are held. */
  private async firstFreeAfter(prefix: string, taken: number, last: number): Promise<number> {
    const { rateCounters } = collections(this.db);
    const held = async (index: number) =>
      (await rateCounters.findOne({ _id: `${prefix}${String(index).padStart(ID_DIGITS, '0')}` }, { projection: { _id: 1 } })) !== null;
    let low = taken;
    let step = 1;
    for (;;) {
      const probe = Math.min(taken + step, last);
      if (probe <= low) return last + 1;
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
      if (probe === last) return last + 1;
      step *= 2;
    }
  }

  /** Forgets windows that have ended (the map would otherwise grow with every client address). */
  prune(now = Date.now()): void {
    for (const [subject, state] of this.windows) {
      if (state.windowEnd <= now) this.windows.delete(subject);
    }
  }
}

export async function sweepExpiredWindows(db: Db, now = Date.now()): Promise<number> {
  const result = await collections(db).rateCounters.deleteMany({ expires_at: { $lt: now } });
  return result.deletedCount;
}
