// Responses that carry a secret (a webhook signing secret, a portal sign-in URL) are kept for replay
// sealed with AES-256-GCM under the configured SECRETS_KEY, so the idempotency store never holds them
// in plain text. A sealed body reads `sealed:v1:<iv>:<tag>:<ciphertext>` (base64url parts).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const PREFIX = 'sealed:v1:';

export interface Sealer {
  seal(plain: string): string;
  /** The plain text of a sealed value; anything else is returned as it is. Throws when the key does not open it. */
  open(stored: string): string;
}

/** The key from its base64 form (32 bytes); a wrong length is refused at start, not at the first replay. */
export function sealerFor(keyBase64: string): Sealer {
  const key = Buffer.from(keyBase64, 'base64');
  if (key.length !== 32) throw new Error(`SECRETS_KEY must be 32 bytes in base64 (got ${key.length} bytes)`);
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${PREFIX}${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${body.toString('base64url')}`;
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [iv, tag, body] = stored
        .slice(PREFIX.length)
        .split(':')
        .map((part) => Buffer.from(part, 'base64url'));
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    },
  };
}

export function newSecretsKey(): string {
  return randomBytes(32).toString('base64');
}
