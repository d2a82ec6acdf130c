// The request log's in-memory buffer: entries wait here between flushes, and a batch the database
// refused waits for the next flush instead of being lost (the writer skips ids already stored).
import type { RequestLogDoc } from '../store/collections';

export class RequestLogBuffer {
  private entries: RequestLogDoc[] = [];

  /** `limit` bounds memory during a long outage: past it the oldest entries are dropped. */
  constructor(private readonly limit = 50_000) {}

  get size(): number {
    return this.entries.length;
  }

  push(entry: RequestLogDoc): void {
    this.entries.push(entry);
    this.trim();
  }

  /** Writes what is buffered; on failure keeps it for the next flush and rethrows with the count dropped. */
  async flush(write: (batch: RequestLogDoc[]) => Promise<void>): Promise<void> {
    if (this.entries.length === 0) return;
    const batch = this.entries;
    this.entries = [];
    try {
      await write(batch);
    } catch (error) {
      this.entries = [...batch, ...this.entries];
      const dropped = this.trim();
      throw Object.assign(new Error(`request log write failed; ${this.entries.length} entries kept for the next flush, ${dropped} dropped`), {
        cause: error,
      });
    }
  }

  private trim(): number {
    const over = this.entries.length - this.limit;
    if (over <= 0) return 0;
    this.entries.splice(0, over);
    return over;
  }
}
