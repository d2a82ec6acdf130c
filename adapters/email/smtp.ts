// Outgoing e-mail over SMTP (nodemailer) to the server SMTP_URL names; `SMTP_URL=disabled` turns
// sending off on purpose, and an unset SMTP_URL is refused where the worker starts (README, Configuration).
import nodemailer from 'nodemailer';

export interface OutgoingMail {
  from: { name: string; address: string };
  to: string;
  subject: string;
  text: string;
  html: string;
  /** `<...@...>`, derived from the e-mail's key: a resend after a crash carries the same one. */
  messageId: string;
  /** Content-Language of the body. */
  language: string;
}

/** The server refused the message for good (an SMTP 5xx): sending it again cannot help. */
export class PermanentMailError extends Error {
  constructor(
    message: string,
    readonly responseCode: number,
  ) {
    super(message);
    this.name = 'PermanentMailError';
  }
}

export interface Mailer {
  /** Where mail goes, for logs and records: `smtp://host:port` (never the credentials) or `disabled`. */
  readonly target: string;
  /** Hands the message to the server; null when sending is disabled. Throws PermanentMailError on a 5xx, any other error when it may work later. */
  send(mail: OutgoingMail): Promise<{ response: string } | null>;
  close(): void;
}

export const SMTP_DISABLED = 'disabled';

// A buyer e-mail activity has a minute; an unreachable or silent server fails the attempt well before.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

function shownTarget(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

export function smtpMailer(smtpUrl: string): Mailer {
  const url = new URL(smtpUrl);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new Error(`SMTP_URL must be smtp://, smtps:// or '${SMTP_DISABLED}', not ${url.protocol}//...`);
  const transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS });
  return {
    target: shownTarget(url),
    async send(mail) {
      try {
        const info = await transport.sendMail({
          from: mail.from,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: mail.messageId,
          headers: { 'Content-Language': mail.language, 'Auto-Submitted': 'auto-generated' },
        });
        return { response: String(info.response ?? '') };
      } catch (error) {
        const code = (error as { responseCode?: unknown }).responseCode;
        if (typeof code === 'number' && code >= 500) throw new PermanentMailError((error as Error).message, code);
        throw error;
      }
    },
    close: () => transport.close(),
  };
}

/** SMTP_URL=disabled: nothing is sent; each buyer e-mail is recorded as skipped. */
export function disabledMailer(): Mailer {
  return { target: SMTP_DISABLED, send: async () => null, close: () => undefined };
}

/** The mailer SMTP_URL configures; throws with the fix when it is unset (no silent default). */
export function mailerFromEnv(env: NodeJS.ProcessEnv = process.env): Mailer {
  const url = env.SMTP_URL?.trim();
  if (!url) {
    throw new Error(
      `SMTP_URL is not set: the worker sends the buyer e-mails (purchase confirmations, cancellations). ` +
        `Set SMTP_URL=smtp://user:pass@host:587 (smtps:// for TLS), or SMTP_URL=${SMTP_DISABLED} to run without e-mail on purpose (npm start sets it to its Mailpit).`,
    );
  }
  return url === SMTP_DISABLED ? disabledMailer() : smtpMailer(url);
}

/** The sender address (the display name is the store's): MAIL_FROM, else no-reply@localhost. */
export function mailFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.MAIL_FROM?.trim() || 'no-reply@localhost';
}
