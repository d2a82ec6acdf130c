// Runs async work one at a time per key, in call order, inside this process. FerretDB v1 applies an
// update as an unlocked read-modify-write (50 concurrent $inc on one document can add 6), so every
// document several requests of this process may update at once goes through one of these queues.
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Queues `fn` behind earlier work on `key`; resolves or rejects with its result. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /**
   * Takes a place in the queue now (synchronously, so places follow call order) and returns a
   * turn: `await turn.ready` waits for the work before it, `turn.done()` lets the next one go.
   */
  reserve(key: string): { ready: Promise<void>; done: () => void } {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const finished = new Promise<void>((resolve) => (release = resolve));
    this.tails.set(key, finished);
    void finished.then(() => {
      if (this.tails.get(key) === finished) this.tails.delete(key);
    });
    let released = false;
    return {
      ready: previous.then(
        () => undefined,
        () => undefined,
      ),
      done: () => {
        if (released) return;
        released = true;
        release();
      },
    };
  }

  get size(): number {
    return this.tails.size;
  }
}
