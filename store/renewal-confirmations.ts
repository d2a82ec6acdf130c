// The links a buyer's e-mail carries to confirm a renewal their bank asked about (3-D Secure in the portal):
// one document per link, only the token's hash kept (the link itself is in the e-mail only), expiring on
// their own (TTL), and a count of the provider reads the link has caused, so no visitor spends the
// provider's rate limit through it (each link allows RENEWAL_CONFIRMATION_READS_MAX).
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';

/** A link works this long: longer than dunning (its last retry is 5 days after the first failure). */
export const RENEWAL_CONFIRMATION_TTL_SECONDS = 10 * 24 * 60 * 60;
/** Provider reads one link may cause (page views and confirmations), whatever the visitor does. */
export const RENEWAL_CONFIRMATION_READS_MAX = 30;

export interface RenewalConfirmationDoc {
  /** sha256 of the link's token. */
  _id: string;
  store_id: string;
  subscription_id: string;
  customer: string | null;
  /** The renewal order and payment the bank asked the buyer to confirm. */
  order_id: string;
  transaction_id: string;
  /** The e-mail that carried it. */
  email_key: string;
  provider_reads: number;
  /** A Date, so the TTL index deletes the link once it has expired. */
  expires_at: Date;
  created: number;
}

function confirmationsCollection(db: Db) {
  return db.collection<RenewalConfirmationDoc>('renewal_confirmations');
}

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** A new link's token (returned once, for the e-mail); an e-mail drafted again gets another, both working. */
export async function issueRenewalConfirmation(
  db: Db,
  input: Omit<RenewalConfirmationDoc, '_id' | 'provider_reads' | 'expires_at' | 'created'>,
  now = Date.now(),
): Promise<string> {
  const token = randomBytes(24).toString('base64url');
  const created = Math.floor(now / 1000);
  await confirmationsCollection(db).insertOne({
    ...input,
    _id: hashOf(token),
    provider_reads: 0,
    expires_at: new Date((created + RENEWAL_CONFIRMATION_TTL_SECONDS) * 1000),
    created,
  });
  return token;
}

/** The link a token opens while it has not expired. */
export async function findRenewalConfirmation(db: Db, token: string, now = Date.now()): Promise<RenewalConfirmationDoc | null> {
  const doc = await confirmationsCollection(db).findOne({ _id: hashOf(token) });
  return doc && doc.expires_at instanceof Date && doc.expires_at.getTime() > now ? doc : null;
}

/** Takes one of the link's provider reads; false once they are spent. */
export async function takeRenewalConfirmationRead(db: Db, id: string): Promise<boolean> {
  const updated = await confirmationsCollection(db).findOneAndUpdate(
    { _id: id, provider_reads: { $lt: RENEWAL_CONFIRMATION_READS_MAX } },
    { $inc: { provider_reads: 1 } },
    { returnDocument: 'after' },
  );
  return updated !== null;
}

/** Expired links, swept as a fallback where the TTL index is unavailable (FerretDB). */
export async function sweepRenewalConfirmations(db: Db, now = Date.now()): Promise<void> {
  await confirmationsCollection(db).deleteMany({ expires_at: { $lte: new Date(now) } });
}
