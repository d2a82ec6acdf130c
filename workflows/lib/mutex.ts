// One critical section at a time for a workflow's update handlers and main loop (the Temporal
// samples' safe-message-handlers pattern). A plain promise chain: deterministic, issues no commands.
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` once every earlier caller's `fn` has settled, in arrival order; its result or failure is the caller's. */
  runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
