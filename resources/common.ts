// Schema helpers every resource description shares: a nullable field, metadata as returned.
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

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

export const MetadataOutput = Type.Record(Type.String(), Type.String());
