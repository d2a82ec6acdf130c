// The one pagination helper every list uses: the list envelope, limit 1..100 (default 10),
// starting_after / ending_before cursors (not both; an unknown cursor is 404 naming it). The filter
// kept with a cursor and the stable order are the resource's list function's in store/ (findPage).
import { Type } from '@sinclair/typebox';
import { ApiError } from '../domain/errors';
import type { PageResult, PageWindow } from '../store/pagination';

export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Page size, 1 to 100.' })),
  starting_after: Type.Optional(Type.String({ description: 'Id of the last item of the current page: returns the next page, in the list order.' })),
  ending_before: Type.Optional(
    Type.String({ description: 'Id of the first item of the current page: returns the previous page, in the list order.' }),
  ),
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
    data: Type.Array(item, { description: 'Newest first by created, then id (offers alphabetically, webhook endpoints oldest first).' }),
  });

export interface ListResult<T> {
  object: 'list';
  url: string;
  has_more: boolean;
  data: T[];
}

/** One page of a list from its store function (store/), which binds the store, the filter and the order. */
export type PageReader<D> = (window: PageWindow) => Promise<PageResult<D>>;

export async function paginate<D, T>(
  readPage: PageReader<D>,
  options: { query: PageQuery; url: string; toApi: (doc: D) => T },
): Promise<ListResult<T>> {
  const { query } = options;
  if (query.starting_after !== undefined && query.ending_before !== undefined) {
    throw new ApiError('parameter_invalid', 'Send starting_after or ending_before, not both.', { param: 'ending_before' });
  }
  const backwards = query.ending_before !== undefined;
  const cursorId = query.starting_after ?? query.ending_before;
  const page = await readPage({ limit: query.limit ?? 10, cursorId, backwards });
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
