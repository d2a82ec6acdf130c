// Values the global setup provides to every test file through vitest's inject().
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** mongodb:// URI of the FerretDB (or external MongoDB) the suites share. */
    mongoUri: string;
    /** host:port of the Temporal dev server (or external cluster) the suites share. */
    temporalAddress: string;
    /** Mailpit's base URL (JSON API under /api/v1) where SMTP_URL's mail lands; null with an external SMTP_URL and no MAILPIT_URL. */
    mailpitUrl: string | null;
  }
}
