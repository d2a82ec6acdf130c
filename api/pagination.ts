// The one pagination helper every list uses: the list envelope, limit 1..100 (default 10),
// starting_after / ending_before cursors (not both; an unknown cursor is 404 naming it),
// filters kept with a cursor, and a stable order (by time-ordered id, or by a field then id).
import { Type } from '@sinclair/typebox';
import type { Collection, Document, Filter, Sort } from 'mongodb';
import { ApiError } from '../domain/errors';
import { findOwnedById } from '../store/owned';

export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Page size, 1 to 100.' })),
  starting_after: Type.Optional(Type.String({ description: 'Id of the last item of the current page: returns the next page.' })),
  ending_before: Type.Optional(Type.String({ description: 'Id of the first item of the current page: returns the previous page.' })),
};

export interface PageQuery {
  limit?: number;
  starting_after?: string;
  ending_before?: string;
}

export const listEnvelope = <T extends import('@sinclair/typebox').TSchema>(item: T) =>
  Type.Object({
    object: Type.Literal('list'),
    url: Type.String(),
    has_more: Type.Boolean(),
    data: Type.Array(item),
  });

export interface ListResult<T> {
  object: 'list';
  url: string;
  has_more: boolean;
  data: T[];
}

/**
 * Order of a list: newest first by id (the default; ids are time-ordered, so equal `created` seconds
 * still have one stable order), oldest first, by a field then id, or alphabetically by a text field
 * then id. Alphabetical order compares like people read (case and accents aside, numbers by value),
 * the Intl collator's order, which no database collation reproduces exactly for every key: it sorts
 * the filtered set in memory, so it is for small per-store collections such as offers.
 */
export type ListOrder =
  | { by: '_id'; direction: 1 | -1 }
  | { by: string; direction: 1 | -1; field: true }
  | { by: string; direction: 1 | -1; alphabetical: true };

export const NEWEST_FIRST: ListOrder = { by: '_id', direction: -1 };
export const OLDEST_FIRST: ListOrder = { by: '_id', direction: 1 };
export const alphabeticalBy = (field: string): ListOrder => ({ by: field, direction: 1, alphabetical: true });

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
    $or: [
      { [order.by]: { [beyond(direction)]: value } },
      { [order.by]: value, _id: { [beyond(direction)]: cursor._id } },
    ],
  };
}

function sortOf(order: ListOrder, direction: 1 | -1): Sort {
  return order.by === '_id' ? { _id: direction } : { [order.by]: direction, _id: direction };
}

export async function paginate<D extends Document, T>(
  collection: Collection<D>,
  options: {
    storeId: string;
    filter?: Filter<D>;
    query: PageQuery;
    url: string;
    order?: ListOrder;
    toApi: (doc: D) => T;
  },
): Promise<ListResult<T>> {
  const { query, storeId } = options;
  const order = options.order ?? NEWEST_FIRST;
  const limit = query.limit ?? 10;
  if (query.starting_after !== undefined && query.ending_before !== undefined) {
    throw new ApiError('parameter_invalid', 'Send starting_after or ending_before, not both.', { param: 'ending_before' });
  }
  const base = { store_id: storeId, ...(options.filter ?? {}) } as Filter<D>;
  const cursorId = query.starting_after ?? query.ending_before;
  const backwards = query.ending_before !== undefined;
  if ('alphabetical' in order) return paginateInMemory(collection, storeId, base, order.by, query, options.url, options.toApi);
  let filter: Filter<D> = base;
  if (cursorId !== undefined) {
    const param = backwards ? 'ending_before' : 'starting_after';
    const cursor = await findOwnedById(collection as unknown as Collection<D & { _id: string; store_id: string }>, storeId, cursorId);
    if (!cursor) throw new ApiError('resource_missing', `No such object: '${cursorId}'`, { param });
    const direction = (backwards ? -order.direction : order.direction) as 1 | -1;
    filter = { $and: [base, cursorFilter(order, cursor, direction)] } as Filter<D>;
  }
  const direction = (backwards ? -order.direction : order.direction) as 1 | -1;
  const docs = (await collection
    .find(filter)
    .sort(sortOf(order, direction))
    .limit(limit + 1)
    .toArray()) as D[];
  const has_more = docs.length > limit;
  const page = docs.slice(0, limit);
  if (backwards) page.reverse();
  return { object: 'list', url: options.url, has_more, data: page.map(options.toApi) };
}

async function paginateInMemory<D extends Document, T>(
  collection: Collection<D>,
  storeId: string,
  filter: Filter<D>,
  field: string,
  query: PageQuery,
  url: string,
  toApi: (doc: D) => T,
): Promise<ListResult<T>> {
  const limit = query.limit ?? 10;
  const docs = ((await collection.find(filter).toArray()) as D[]).sort(compareAlphabetical(field));
  let start = 0;
  let end = docs.length;
  if (query.starting_after !== undefined || query.ending_before !== undefined) {
    const backwards = query.ending_before !== undefined;
    const cursorId = (query.starting_after ?? query.ending_before) as string;
    let index = docs.findIndex((d) => d._id === cursorId);
    if (index === -1) {
      // The cursor may exist but fall outside the filter: place it where it would sort.
      const cursor = await findOwnedById(collection as unknown as Collection<D & { _id: string; store_id: string }>, storeId, cursorId);
      if (!cursor) throw new ApiError('resource_missing', `No such object: '${cursorId}'`, { param: backwards ? 'ending_before' : 'starting_after' });
      const compare = compareAlphabetical(field);
      const after = docs.findIndex((d) => compare(d, cursor as D) > 0);
      index = after === -1 ? docs.length : after;
      if (backwards) end = index;
      else start = index;
    } else if (backwards) end = index;
    else start = index + 1;
    if (backwards) {
      const from = Math.max(0, end - limit);
      return { object: 'list', url, has_more: from > 0, data: docs.slice(from, end).map(toApi) };
    }
  }
  const page = docs.slice(start, start + limit);
  return { object: 'list', url, has_more: start + limit < end, data: page.map(toApi) };
}

/** `created[gte]`, `created[gt]`, `created[lte]`, `created[lt]` (Unix seconds), as lists filter by time. */
export const CreatedRangeQuery = Type.Optional(
  Type.Object(
    {
      gte: Type.Optional(Type.Integer()),
      gt: Type.Optional(Type.Integer()),
      lte: Type.Optional(Type.Integer()),
      lt: Type.Optional(Type.Integer()),
    },
    { additionalProperties: false },
  ),
);

export function createdFilter(range: { gte?: number; gt?: number; lte?: number; lt?: number } | undefined): Record<string, unknown> {
  if (!range) return {};
  const condition: Record<string, number> = {};
  for (const op of ['gte', 'gt', 'lte', 'lt'] as const) {
    if (range[op] !== undefined) condition[`$${op}`] = range[op]!;
  }
  return Object.keys(condition).length > 0 ? { created: condition } : {};
}
