// keys create | list | revoke. The full key is printed once at creation; only a hash is kept.
import type { ApiKeyDoc, Scope } from '../../store/collections';
import { createApiKey, findStore, listApiKeys, revokeApiKey } from '../../store/stores';
import { positional, str, type Command } from './types';

function publicKey(doc: ApiKeyDoc) {
  return {
    id: doc._id,
    store: doc.store_id,
    name: doc.name,
    scopes: doc.scopes,
    version: doc.version,
    last4: doc.last4,
    expires_at: doc.expires_at,
    revoked_at: doc.revoked_at,
    created: doc.created,
  };
}

function parseExpiry(value: string | undefined): number | null {
  if (!value) return null;
  const seconds = /^\d+$/.test(value) ? Number(value) : Math.floor(Date.parse(value) / 1000);
  if (!Number.isFinite(seconds)) throw new Error('--expires takes Unix seconds or an ISO date');
  return seconds;
}

export const keyCommands: Record<string, Command> = {
  'keys create': {
    summary: 'create an API key (--store --name [--scopes read,write] [--expires <unix|ISO date>])',
    options: { store: { type: 'string' }, name: { type: 'string' }, scopes: { type: 'string' }, expires: { type: 'string' } },
    async run(ctx) {
      const storeId = str(ctx, 'store')!;
      if (!(await findStore(ctx.db, storeId))) throw new Error(`no store ${storeId}`);
      const scopes = (str(ctx, 'scopes', false) ?? 'read,write').split(',').map((s) => s.trim()) as Scope[];
      if (scopes.length === 0 || scopes.some((s) => s !== 'read' && s !== 'write')) throw new Error('--scopes is read, write or read,write');
      const { doc, key } = await createApiKey(ctx.db, {
        storeId,
        name: str(ctx, 'name')!,
        scopes: [...new Set(scopes)],
        expiresAt: parseExpiry(str(ctx, 'expires', false)),
      });
      return { ...publicKey(doc), key };
    },
    format: (r) => {
      const k = r as ReturnType<typeof publicKey> & { key: string };
      return `created ${k.id} (${k.name}, ${k.scopes.join(',')}, version ${k.version})\nkey (shown once): ${k.key}`;
    },
  },
  'keys list': {
    summary: 'list the API keys of a store (--store)',
    options: { store: { type: 'string' } },
    async run(ctx) {
      const docs = await listApiKeys(ctx.db, str(ctx, 'store')!);
      return docs.map(publicKey);
    },
    format: (r) =>
      (r as ReturnType<typeof publicKey>[])
        .map((k) => `${k.id}  ${k.name}  ${k.scopes.join(',')}  ...${k.last4}${k.revoked_at ? '  revoked' : ''}`)
        .join('\n'),
  },
  'keys revoke': {
    summary: 'revoke an API key (<ak_ id>); immediate and irreversible',
    options: {},
    async run(ctx) {
      const id = positional(ctx, 0, 'key id');
      const current = await revokeApiKey(ctx.db, id);
      if (!current) throw new Error(`no key ${id}`);
      return publicKey(current);
    },
    format: (r) => `revoked ${(r as { id: string }).id}`,
  },
};
