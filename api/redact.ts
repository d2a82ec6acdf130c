// What a log may say about a request path: a portal sign-in token is a credential for 15 minutes, so
// `/…/session/<token>` is written as `/…/session/[redacted]`, and a renewal confirmation link's token
// (`/…/payments/<token>`, an e-mailed capability) likewise (the query string is dropped too).
export function redactPath(url: string): string {
  return url
    .split('?')[0]
    .replace(/\/session\/[^/]+/g, '/session/[redacted]')
    .replace(/\/payments\/[^/]+/g, '/payments/[redacted]');
}

/** Fastify's request serializer with the path redacted. */
export function redactedRequest(request: { method: string; url: string; ip?: string; hostname?: string; id?: string }) {
  return { method: request.method, url: redactPath(request.url), hostname: request.hostname, remoteAddress: request.ip };
}
