// The product as the API shows it (read-only): its schema (OpenAPI component `Product`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { ProductDoc } from '../store/collections';
import { Nullable } from './common';

export const Product = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('product'),
    name: Type.String(),
    description: Nullable(Type.String()),
    family: Nullable(Type.String()),
    active: Type.Boolean(),
    // Downloadable files the thank-you page lists (then it waits for the buyer instead of redirecting).
    files: Type.Array(Type.Object({ name: Type.String(), url: Type.String() })),
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
    files: (doc.files ?? []).map((file) => ({ name: file.name, url: file.url })),
    livemode: true,
    created: doc.created,
  };
}
