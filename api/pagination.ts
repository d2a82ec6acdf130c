// The one pagination helper every list uses: the list envelope, limit 1..100 (default 10),
// starting_after / ending_before cursors (not both; an unknown cursor is 404 naming it),
// filters kept with a cursor, and a stable order (by time-ordered id, or by a field then id).
import { Type } from '@sinclair/typebox';
import { ApiError } from '../domain/errors';
import {
  alphabeticalBy,
  findPage,
  NEWEST_FIRST,
  OLDEST_FIRST,
  type ListedCollection,
  type ListedDocument,
  type ListFilter,
  type ListOrder,
} from '../store/pagination';

export { alphabeticalBy, OLDEST_FIRST };

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

export async function paginate<D extends ListedDocument, T>(
  collection: ListedCollection<D>,
  options: {
    storeId: string;
    filter?: ListFilter;
    query: PageQuery;
    url: string;
    order?: ListOrder;
    toApi: (doc: D) => T;
  },
): Promise<ListResult<T>> {
  const { query } = options;
  if (query.starting_after !== undefined && query.ending_before !== undefined) {
    throw new ApiError('parameter_invalid', 'Send starting_after or ending_before, not both.', { param: 'ending_before' });
  }
  const backwards = query.ending_before !== undefined;
  const cursorId = query.starting_after ?? query.ending_before;
  const page = await findPage(collection, {
    storeId: options.storeId,
    filter: options.filter ?? {},
    order: options.order ?? NEWEST_FIRST,
    limit: query.limit ?? 10,
    cursorId,
    backwards,
  });
  if (page === 'cursor_missing')
    throw new ApiError('resource_missing', `No such object: '${cursorId}'`, { param: backwards ? 'ending_before' : 'starting_after' });
  return { object: 'list', url: options.url, has_more: page.hasMore, data: page.docs.map(options.toApi) };
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
