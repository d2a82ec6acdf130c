// The product as the API shows it (read-only): its schema (OpenAPI component `Product`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { ProductDoc } from '../../store/collections';
import { Nullable } from './common';

export const Product = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('product'),
    name: Type.String(),
    description: Nullable(Type.String()),
    family: Nullable(Type.String()),
    active: Type.Boolean(),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Product' },
);
export type ProductObject = Static<typeof Product>;

export function productObject(doc: ProductDoc): ProductObject {
  return {
    id: doc._id,
    object: 'product',
    name: doc.name,
    description: doc.description,
    family: doc.family,
    active: doc.active,
    livemode: true,
    created: doc.created,
  };
}
