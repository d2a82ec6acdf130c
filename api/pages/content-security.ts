// The pages' Content-Security-Policy: scripts, styles and connections only from this origin, nothing
// inline, never framed. With a Stripe connection the card field and 3-D Secure come from Stripe.js, so its
// origin (STRIPE_JS_URL's) may run scripts, frames and calls, with Stripe's own documented hosts when it is
// Stripe's (api.stripe.com for calls, hooks.stripe.com for 3-D Secure frames, *.stripe.com for PIX QR images).
export const CONTENT_SECURITY_POLICY = policy({});

const STRIPE_JS_ORIGIN = 'https://js.stripe.com';

interface Sources {
  script?: string[];
  frame?: string[];
  connect?: string[];
  img?: string[];
}

function policy(extra: Sources): string {
  const list = (own: string[], more: string[] = []) => [...own, ...more].join(' ');
  return [
    "default-src 'none'",
    `script-src ${list(["'self'"], extra.script)}`,
    "style-src 'self'",
    `img-src ${list(["'self'", 'data:'], extra.img)}`,
    `connect-src ${list(["'self'"], extra.connect)}`,
    ...(extra.frame?.length ? [`frame-src ${list([], extra.frame)}`] : []),
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The policy of a process whose pages load Stripe.js from `jsUrl`; the strict one without it. */
export function contentSecurityPolicy(stripeJsUrl?: string | null): string {
  if (!stripeJsUrl) return CONTENT_SECURITY_POLICY;
  const origin = new URL(stripeJsUrl).origin;
  if (origin !== STRIPE_JS_ORIGIN) return policy({ script: [origin], frame: [origin], connect: [origin], img: [origin] });
  return policy({
    script: [origin, 'https://*.js.stripe.com'],
    frame: [origin, 'https://*.js.stripe.com', 'https://hooks.stripe.com'],
    connect: ['https://api.stripe.com'],
    img: ['https://*.stripe.com'],
  });
}
