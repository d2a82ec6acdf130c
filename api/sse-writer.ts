// Server-Sent Events onto one response with backpressure: a message is written only once the reader
// has taken what came before (the socket's buffer under its high-water mark), so a reader that stops
// holds at most that buffer and one message, and one that stays behind past `stallMs` ends its session.
import type { ServerResponse } from 'node:http';

export type WriteOutcome = 'written' | 'ended' | 'stalled';

export class SseWriter {
  constructor(
    private readonly out: ServerResponse,
    private readonly stallMs: number,
    private readonly signal: AbortSignal,
  ) {}

  /** Bytes accepted but not yet handed to the kernel: what a slow reader costs this process. */
  get buffered(): number {
    return this.out.writableLength;
  }

  /** The reader is behind: the socket's buffer is at its high-water mark and nothing more is written. */
  get behind(): boolean {
    return this.out.writableNeedDrain;
  }

  /** Writes one message once the reader has caught up; 'ended' when the session or socket ended first. */
  async write(message: string): Promise<WriteOutcome> {
    const ready = await this.caughtUp();
    if (ready !== 'written') return ready;
    this.out.write(message);
    return 'written';
  }

  /** A keep-alive comment, skipped while the reader is behind (it would only pile up). */
  keepAlive(): void {
    if (!this.out.writableNeedDrain && !this.out.destroyed) this.out.write(': keep-alive\n\n');
  }

  private caughtUp(): Promise<WriteOutcome> {
    if (this.signal.aborted || this.out.destroyed || this.out.writableEnded) return Promise.resolve('ended');
    if (!this.out.writableNeedDrain) return Promise.resolve('written');
    return new Promise((resolve) => {
      const finish = (outcome: WriteOutcome) => {
        clearTimeout(timer);
        this.out.off('drain', onDrain);
        this.out.off('close', onEnd);
        this.signal.removeEventListener('abort', onEnd);
        resolve(outcome);
      };
      const onDrain = () => finish('written');
      const onEnd = () => finish('ended');
      const timer = setTimeout(() => finish('stalled'), this.stallMs);
      this.out.once('drain', onDrain);
      this.out.once('close', onEnd);
      this.signal.addEventListener('abort', onEnd, { once: true });
    });
  }
}
