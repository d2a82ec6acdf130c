// The buyer e-mails the worker sent, one document per e-mail keyed by the e-mail's deterministic key
// (`<workflow id>/<purpose>...`): checked before sending and written after, so a retried or replayed
// buyer e-mail activity finds it and sends nothing.
import type { Db } from 'mongodb';
import { insertOnce } from './insert-once';

export type SentMailPurpose = 'payment_confirmation' | 'cancellation' | 'payment_authentication' | 'refund' | 'late_payment_refund';

/**
 * sending: handed to the SMTP server, not yet known to be accepted (a retry sends again, same Message-ID);
 * sent: accepted by the server; skipped: nothing sent on purpose (`skipped_reason`); failed: refused for good.
 */
export type SentMailStatus = 'sending' | 'sent' | 'skipped' | 'failed';

export interface SentMailDoc {
  /** The e-mail's key. */
  _id: string;
  store_id: string;
  purpose: SentMailPurpose;
  /** What it is about: the order or the subscription. */
  subject_id: string;
  to: string | null;
  language: string | null;
  subject: string | null;
  message_id: string | null;
  status: SentMailStatus;
  /**
   * mail_disabled (SMTP_URL=disabled), store_disabled (the store turned the e-mail off), no_recipient, nothing_charged (a free
   * trial's order); for a renewal to confirm, no_portal (no portal address, or the portal off) and nothing_to_confirm (paid or retried).
   */
  skipped_reason: string | null;
  /** The SMTP server's answer: its queue id when accepted, its refusal when failed. */
  smtp_response: string | null;
  /** Times the message was handed to the server (more than 1 only after a crash mid-send). */
  attempts: number;
  created: number;
  sent_at: number | null;
}

export function sentMailCollection(db: Db) {
  return db.collection<SentMailDoc>('sent_mail');
}

export function findSentMail(db: Db, storeId: string, key: string): Promise<SentMailDoc | null> {
  return sentMailCollection(db).findOne({ _id: key, store_id: storeId });
}

/** Records the e-mail (first writer wins); returns the stored document. */
export async function claimSentMail(db: Db, doc: SentMailDoc): Promise<SentMailDoc> {
  return insertOnce(sentMailCollection(db), doc, () => findSentMail(db, doc.store_id, doc._id));
}

/** One more hand-off to the SMTP server of an e-mail still `sending`. */
export async function countSendAttempt(db: Db, storeId: string, key: string): Promise<void> {
  await sentMailCollection(db).updateOne({ _id: key, store_id: storeId, status: 'sending' }, { $inc: { attempts: 1 } });
}

/** sending -> sent, skipped or failed, once. */
export async function settleSentMail(
  db: Db,
  storeId: string,
  key: string,
  outcome: { status: Exclude<SentMailStatus, 'sending'>; smtp_response?: string | null; skipped_reason?: string | null; sent_at?: number | null },
): Promise<void> {
  await sentMailCollection(db).updateOne(
    { _id: key, store_id: storeId, status: 'sending' },
    {
      $set: {
        status: outcome.status,
        smtp_response: outcome.smtp_response ?? null,
        skipped_reason: outcome.skipped_reason ?? null,
        sent_at: outcome.sent_at ?? null,
      },
    },
  );
}

/** A store's buyer e-mails about one order or subscription (tests and operators). */
export function sentMailAbout(db: Db, storeId: string, subjectId: string): Promise<SentMailDoc[]> {
  return sentMailCollection(db).find({ store_id: storeId, subject_id: subjectId }).toArray();
}
