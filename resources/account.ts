// The account as the API shows it: the store a key belongs to and the key itself (OpenAPI component
// `Account`), and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { ApiKeyDoc, StoreDoc } from '../store/collections';
import { Nullable } from './common';

export const Account = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('account'),
    name: Type.String(),
    slug: Nullable(Type.String()),
    country: Type.String(),
    currency: Type.String(),
    timezone: Type.String(),
    api_key: Type.Object({
      id: Type.String(),
      name: Type.String(),
      scopes: Type.Array(Type.Union([Type.Literal('read'), Type.Literal('write')])),
      default_version: Type.String(),
    }),
    api_version: Type.String(),
    livemode: Type.Boolean(),
  },
  { $id: 'Account' },
);
export type Account = Static<typeof Account>;

export function accountObject(store: StoreDoc, apiKey: ApiKeyDoc, apiVersion: string): Account {
  return {
    id: store._id,
    object: 'account',
    name: store.name,
    slug: store.slug,
    country: store.country,
    currency: store.currency,
    timezone: store.timezone,
    api_key: { id: apiKey._id, name: apiKey.name, scopes: apiKey.scopes, default_version: apiKey.version },
    api_version: apiVersion,
    livemode: true,
  };
}
