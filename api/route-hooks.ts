// Route-level hooks added on `onRoute`: a route option holds none, one or several hooks.

/** A route option's hooks as a list (absent, one, or several). */
export function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : ([hooks].flat() as T[]);
}
