// The mail the workers sent, read back from the Mailpit the global setup started (SMTP_URL points
// there) through its JSON API: messages to an address (search), and one message whole.
import { inject } from 'vitest';

export interface MailpitAddress {
  Name: string;
  Address: string;
}

export interface MailpitSummary {
  ID: string;
  /** Without the angle brackets. */
  MessageID: string;
  From: MailpitAddress;
  To: MailpitAddress[];
  Subject: string;
  Created: string;
}

export interface MailpitMessage extends MailpitSummary {
  Text: string;
  HTML: string;
}

function baseUrl(): string {
  const url = inject('mailpitUrl');
  if (!url) throw new Error('no Mailpit to read: SMTP_URL points elsewhere and MAILPIT_URL is unset');
  return url;
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(`${baseUrl()}${path}`, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`Mailpit GET ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** Every message to `address`, newest first (addresses are unique per test, so this is that test's mail). */
export async function messagesTo(address: string): Promise<MailpitSummary[]> {
  const query = encodeURIComponent(`to:"${address}"`);
  const found = await getJson<{ messages: MailpitSummary[] }>(`/api/v1/search?query=${query}&limit=200`);
  // The search matches words; keep the exact recipient.
  return found.messages.filter((message) => message.To.some((to) => to.Address.toLowerCase() === address.toLowerCase()));
}

/** One message with its text and HTML bodies (GET /api/v1/message/{ID}). */
export function mailpitMessage(id: string): Promise<MailpitMessage> {
  return getJson<MailpitMessage>(`/api/v1/message/${encodeURIComponent(id)}`);
}
