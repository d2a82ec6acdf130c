// The customer as the API shows it: its schema (OpenAPI component `Customer`) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import { decodeMetadata } from '../domain/metadata';
import type { CustomerDoc } from '../store/collections';
import { MetadataOutput, Nullable } from './common';

const NullableText = Nullable(Type.String());

export const Customer = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('customer'),
    email: Type.String(),
    name: NullableText,
    phone: NullableText,
    document: Nullable(Type.Object({ type: Type.String(), number_masked: Type.String() })),
    address: Nullable(
      Type.Object({
        line1: NullableText,
        line2: NullableText,
        number: NullableText,
        district: NullableText,
        city: NullableText,
        state: NullableText,
        postal_code: NullableText,
        country: NullableText,
      }),
    ),
    country: NullableText,
    locale: NullableText,
    metadata: MetadataOutput,
    test_clock: Nullable(Type.String({ description: 'The test clock it lives on (test helpers extension), or null.' })),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'Customer' },
);
export type CustomerObject = Static<typeof Customer>;

function addressObject(address: NonNullable<CustomerDoc['address']>): CustomerObject['address'] {
  return {
    line1: address.line1 ?? null,
    line2: address.line2 ?? null,
    number: address.number ?? null,
    district: address.district ?? null,
    city: address.city ?? null,
    state: address.state ?? null,
    postal_code: address.postal_code ?? null,
    country: address.country ?? null,
  };
}

export function customerObject(doc: CustomerDoc): CustomerObject {
  return {
    id: doc._id,
    object: 'customer',
    email: doc.email,
    name: doc.name,
    phone: doc.phone,
    document: doc.document ? { type: doc.document.type, number_masked: doc.document.number_masked } : null,
    address: doc.address ? addressObject(doc.address) : null,
    country: doc.country,
    locale: doc.locale,
    metadata: decodeMetadata(doc.metadata),
    test_clock: doc.test_clock ?? null,
    livemode: doc.livemode,
    created: doc.created,
  };
}
