// One page of a store's documents in a stable order, the query behind every list: by `created` then id
// (or another field then id), after or before a cursor document; or a small filtered set sorted in memory.
// Each resource's list function (listOrders, listCustomers, ...) calls findPage with its own collection.
import type { Collection, Document, Filter, Sort } from 'mongodb';
import { findOwnedById } from './owned';

/** A collection a list reads (its resource's store module hands it in; only this module queries it). */
type ListedCollection<D extends Document> = Collection<D>;

/** Query conditions on a list's documents, besides its store (equality, or a condition such as `{ $gte: n }`). */
export type ListFilter = Record<string, unknown>;

/**
 * Order of a list: by id, by a field then id (newest first is `created` then id: a checkout's
 * subscription carries its session's time in its id but its payment time in `created`, and a delivery
 * its event's), or alphabetically by a text field then id. Alphabetical order compares like people read (case and accents aside, numbers by value),
 * the Intl collator's order, which no database collation reproduces exactly for every key: it sorts
 * the filtered set in memory, so it is for small per-store collections such as offers.
 */
export type ListOrder =
  { by: '_id'; direction: 1 | -1 } | { by: string; direction: 1 | -1; field: true } | { by: string; direction: 1 | -1; alphabetical: true };

/** The spec's list order: `created` then id, so an id's own time never reorders a list. */
export const NEWEST_FIRST: ListOrder = { by: 'created', direction: -1, field: true };
export const OLDEST_FIRST: ListOrder = { by: 'created', direction: 1, field: true };
export const alphabeticalBy = (field: string): ListOrder => ({ by: field, direction: 1, alphabetical: true });

export interface PageRequest {
  storeId: string;
  filter: ListFilter;
  order: ListOrder;
  limit: number;
  /** The id the page starts after (or, backwards, ends before). */
  cursorId?: string;
  backwards: boolean;
}

/** Where a page starts and how long it is: the caller's part of a request (filter and order are the list function's). */
export type PageWindow = Pick<PageRequest, 'limit' | 'cursorId' | 'backwards'>;

/** A `created` range in Unix seconds, as lists filter by time. */
export interface CreatedRange {
  gte?: number;
  gt?: number;
  lte?: number;
  lt?: number;
}

/** The `created` condition of a range; none when the range is absent or empty. */
export function createdFilter(range: CreatedRange | undefined): ListFilter {
  if (!range) return {};
  const condition: Record<string, number> = {};
  for (const op of ['gte', 'gt', 'lte', 'lt'] as const) {
    if (range[op] !== undefined) condition[`$${op}`] = range[op]!;
  }
  return Object.keys(condition).length > 0 ? { created: condition } : {};
}

/** Equality conditions on the fields asked for; an undefined one is left out (the driver would match it to null). */
export function definedFields(fields: Record<string, unknown>): ListFilter {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** The page's documents in list order and whether more follow; `cursor_missing` when the cursor is no document of the store. */
export type PageResult<D> = { docs: D[]; hasMore: boolean } | 'cursor_missing';

const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });

function compareAlphabetical(field: string) {
  return (a: Document, b: Document): number =>
    collator.compare(String(a[field] ?? ''), String(b[field] ?? '')) ||
    (String(a[field] ?? '') < String(b[field] ?? '') ? -1 : String(a[field] ?? '') > String(b[field] ?? '') ? 1 : 0) ||
    (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
}

function beyond(direction: 1 | -1) {
  return direction === 1 ? '$gt' : '$lt';
}

function cursorFilter(order: ListOrder, cursor: Document, direction: 1 | -1): Filter<Document> {
  if (order.by === '_id') return { _id: { [beyond(direction)]: cursor._id } };
  const value = cursor[order.by];
  return {
    $or: [{ [order.by]: { [beyond(direction)]: value } }, { [order.by]: value, _id: { [beyond(direction)]: cursor._id } }],
  };
}

function sortOf(order: ListOrder, direction: 1 | -1): Sort {
  return order.by === '_id' ? { _id: direction } : { [order.by]: direction, _id: direction };
}

/** The cursor document, read only within the store (another store's id is missing). */
function findCursor<D extends Document>(collection: ListedCollection<D>, storeId: string, id: string): Promise<Document | null> {
  return findOwnedById(collection as unknown as Collection<Document & { _id: string; store_id: string }>, storeId, id);
}

/** One page of the store's documents matching `filter`, in `order`, after (or before) the cursor. */
export async function findPage<D extends Document>(collection: ListedCollection<D>, request: PageRequest): Promise<PageResult<D>> {
  const { order, storeId, cursorId, backwards, limit } = request;
  const base = { store_id: storeId, ...request.filter } as unknown as Filter<D>;
  if ('alphabetical' in order) return findPageInMemory(collection, base, order.by, request);
  const direction = (backwards ? -order.direction : order.direction) as 1 | -1;
  let filter: Filter<D> = base;
  if (cursorId !== undefined) {
    const cursor = await findCursor(collection, storeId, cursorId);
    if (!cursor) return 'cursor_missing';
    filter = { $and: [base, cursorFilter(order, cursor, direction)] } as Filter<D>;
  }
  const docs = (await collection
    .find(filter)
    .sort(sortOf(order, direction))
    .limit(limit + 1)
    .toArray()) as D[];
  const page = docs.slice(0, limit);
  if (backwards) page.reverse();
  return { docs: page, hasMore: docs.length > limit };
}

/** Alphabetical lists: the whole filtered set sorted like people read, then cut at the cursor. */
async function findPageInMemory<D extends Document>(
  collection: ListedCollection<D>,
  filter: Filter<D>,
  field: string,
  request: PageRequest,
): Promise<PageResult<D>> {
  const { limit, cursorId, backwards } = request;
  const docs = ((await collection.find(filter).toArray()) as D[]).sort(compareAlphabetical(field));
  let start = 0;
  let end = docs.length;
  if (cursorId !== undefined) {
    let index = docs.findIndex((d) => d._id === cursorId);
    if (index === -1) {
      // The cursor may exist but fall outside the filter: place it where it would sort.
      const cursor = await findCursor(collection, request.storeId, cursorId);
      if (!cursor) return 'cursor_missing';
      const compare = compareAlphabetical(field);
      const after = docs.findIndex((d) => compare(d, cursor) > 0);
      index = after === -1 ? docs.length : after;
      if (backwards) end = index;
      else start = index;
    } else if (backwards) end = index;
    else start = index + 1;
    if (backwards) {
      const from = Math.max(0, end - limit);
      return { docs: docs.slice(from, end), hasMore: from > 0 };
    }
  }
  return { docs: docs.slice(start, start + limit), hasMore: start + limit < end };
}
