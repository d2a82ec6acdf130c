// Schemas shared by every route module: the error object, metadata, ids in paths.
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { ERROR_CODES } from '../../domain/errors';

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

/**
 * A value or null. Plain typed schemas become `type: [T, "null"]` rather than `anyOf`: with type
 * coercion on (form values arrive as text), ajv would otherwise coerce a JSON null into the first
 * branch ("" for text, 0 for numbers) instead of keeping it null.
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const type = (schema as { type?: unknown }).type;
  if (typeof type === 'string' && !('const' in schema) && !('enum' in schema)) {
    // A JSON copy drops TypeBox's symbol keys, so nothing treats the result as a plain T.
    return Type.Unsafe<Static<T> | null>({ ...JSON.parse(JSON.stringify(schema)), type: [type, 'null'] });
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]));
}

/** Metadata as sent: text, numbers and booleans are accepted (kept as text); null removes a key. */
export const MetadataInput = Type.Union([
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  Type.Null(),
]);

export const MetadataOutput = Type.Record(Type.String(), Type.String());

export const IdParams = Type.Object({ id: Type.String() });

/** Routes that take no query parameters say so, so an unknown one is refused like any other. */
export const NoQuery = Type.Object({}, { additionalProperties: false });
