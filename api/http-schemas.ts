// HTTP-only schemas every route module shares: the error body and the statuses that carry it, metadata
// as sent, ids in paths, an empty query. Resource descriptions live in resources/.
import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from '../domain/errors';

export const ErrorResponse = Type.Object(
  {
    error: Type.Object(
      {
        type: Type.String(),
        code: Type.String({ description: `One of: ${ERROR_CODES.join(', ')}, or a card decline code.` }),
        message: Type.String(),
        param: Type.Union([Type.String(), Type.Null()]),
        doc_url: Type.String(),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'Error' },
);

/** Error statuses every authenticated route can answer with. */
export function withErrors<R extends Record<number, TSchema>>(responses: R) {
  const ref = Type.Ref('Error');
  return {
    ...responses,
    400: ref,
    401: ref,
    403: ref,
    404: ref,
    409: ref,
    429: ref,
    500: ref,
  };
}

/** Metadata as sent: text, numbers and booleans are accepted (kept as text); null removes a key. */
export const MetadataInput = Type.Union([
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  Type.Null(),
]);

export const IdParams = Type.Object({ id: Type.String() });

/** Routes that take no query parameters say so, so an unknown one is refused like any other. */
export const NoQuery = Type.Object({}, { additionalProperties: false });
