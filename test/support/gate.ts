// A gate a fault wrapper awaits (a provider holding its answer) until the test opens it.
export interface Gate {
  promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
