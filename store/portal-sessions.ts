// Customer portal: sign-in links (billing_portal.session, single use within 15 minutes, only the
// token's hash is stored) and the portal sessions they open in the customer's browser (a cookie
// whose hash is the document id). Claiming a link is one conditional update, so it works once.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { newId } from '../domain/ids';
import { PORTAL_LINK_TTL_SECONDS, PORTAL_SESSION_TTL_SECONDS } from '../domain/checkout';

export interface PortalLinkDoc {
  _id: string;
  store_id: string;
  customer: string;
  token_hash: string;
  /** The portal address the link opens; the link itself (address + token) is returned once, never stored. */
  address: string;
  return_url: string | null;
  expires_at: number;
  used_at: number | null;
  livemode: boolean;
  created: number;
}

export interface PortalLoginDoc {
  /** sha256 of the cookie value. */
  _id: string;
  store_id: string;
  customer: string;
  /** Where the portal lives for this login (custom domain or {portal_url}/{slug}). */
  base_path: string;
  /** Keyed secret for the forms' anti-forgery token. */
  csrf_secret: string;
  /** A Date, so a TTL index can delete the login once it has expired. */
  expires_at: Date;
  created: number;
}

export function portalLinksCollection(db: Db) {
  return db.collection<PortalLinkDoc>('billing_portal_sessions');
}

function portalLoginsCollection(db: Db) {
  return db.collection<PortalLoginDoc>('portal_logins');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function newToken(): string {
  return randomBytes(24).toString('base64url');
}

/** A new sign-in link at `address` (the store's portal address): its document and its URL, which only the caller sees. */
export async function createPortalLink(
  db: Db,
  input: { storeId: string; customer: string; address: string; returnUrl: string | null },
  now = Date.now(),
): Promise<{ doc: PortalLinkDoc; url: string }> {
  const token = newToken();
  const created = Math.floor(now / 1000);
  const doc: PortalLinkDoc = {
    _id: newId('bps', now),
    store_id: input.storeId,
    customer: input.customer,
    token_hash: hashToken(token),
    address: input.address,
    return_url: input.returnUrl,
    expires_at: created + PORTAL_LINK_TTL_SECONDS,
    used_at: null,
    livemode: true,
    created,
  };
  await portalLinksCollection(db).insertOne(doc);
  return { doc, url: `${input.address}/session/${token}` };
}

/** The link a token opens, looked up without using it. */
export function findPortalLink(db: Db, token: string): Promise<PortalLinkDoc | null> {
  return portalLinksCollection(db).findOne({ token_hash: hashToken(token) });
}

/** Uses the link once: the first opener within 15 minutes gets it, anyone later gets null. */
export async function claimPortalLink(db: Db, token: string, now = Date.now()): Promise<PortalLinkDoc | null> {
  const seconds = Math.floor(now / 1000);
  return portalLinksCollection(db).findOneAndUpdate(
    { token_hash: hashToken(token), used_at: null, expires_at: { $gt: seconds } },
    { $set: { used_at: seconds } },
    { returnDocument: 'after' },
  );
}

/** Opens a portal session; returns the cookie value (only its hash is kept). */
export async function openPortalLogin(
  db: Db,
  input: { storeId: string; customer: string; basePath: string },
  now = Date.now(),
): Promise<{ cookie: string; login: PortalLoginDoc }> {
  const cookie = newToken();
  const created = Math.floor(now / 1000);
  const login: PortalLoginDoc = {
    _id: hashToken(cookie),
    store_id: input.storeId,
    customer: input.customer,
    base_path: input.basePath,
    csrf_secret: newToken(),
    expires_at: new Date((created + PORTAL_SESSION_TTL_SECONDS) * 1000),
    created,
  };
  await portalLoginsCollection(db).insertOne(login);
  return { cookie, login };
}

export async function findPortalLogin(db: Db, cookie: string, now = Date.now()): Promise<PortalLoginDoc | null> {
  const login = await portalLoginsCollection(db).findOne({ _id: hashToken(cookie) });
  // A login written before expires_at became a Date holds a number: it is over, like any expired one.
  if (!login || !(login.expires_at instanceof Date) || login.expires_at.getTime() <= now) return null;
  return login;
}

export async function closePortalLogin(db: Db, cookie: string): Promise<void> {
  await portalLoginsCollection(db).deleteOne({ _id: hashToken(cookie) });
}

/** Expired links and logins, swept as a fallback where the TTL index is unavailable. */
export async function sweepPortalDocs(db: Db, now = Date.now()): Promise<void> {
  const seconds = Math.floor(now / 1000);
  await portalLoginsCollection(db).deleteMany({ $or: [{ expires_at: { $lte: new Date(now) } }, { expires_at: { $not: { $type: 'date' } } }] });
  await portalLinksCollection(db).deleteMany({ expires_at: { $lte: seconds - 24 * 60 * 60 } });
}
