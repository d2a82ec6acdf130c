// The closed list of error codes, each mapped to its HTTP status and error type in one place.
// Everything the API refuses is an ApiError; anything else becomes a 500 api_error.

export const ERROR_TYPES = [
  'invalid_request_error',
  'idempotency_error',
  'authentication_error',
  'card_error',
  'permission_error',
  'rate_limit_error',
  'api_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

const CODES = {
  parameter_missing: [400, 'invalid_request_error'],
  parameter_invalid: [400, 'invalid_request_error'],
  invalid_api_version: [400, 'invalid_request_error'],
  api_key_missing: [401, 'authentication_error'],
  invalid_api_key: [401, 'authentication_error'],
  api_key_revoked: [401, 'authentication_error'],
  api_key_expired: [401, 'authentication_error'],
  api_not_enabled: [403, 'permission_error'],
  project_inactive: [403, 'permission_error'],
  insufficient_scope: [403, 'permission_error'],
  selling_blocked: [403, 'permission_error'],
  resource_missing: [404, 'invalid_request_error'],
  idempotency_key_too_long: [400, 'idempotency_error'],
  idempotency_key_reused: [400, 'idempotency_error'],
  idempotency_key_required: [400, 'idempotency_error'],
  idempotency_key_in_use: [409, 'idempotency_error'],
  rate_limit: [429, 'rate_limit_error'],
  internal_error: [500, 'api_error'],
  service_unavailable: [503, 'api_error'],
  customer_rejected: [400, 'invalid_request_error'],
  subscription_not_chargeable: [400, 'invalid_request_error'],
  no_payment_method: [400, 'invalid_request_error'],
  payment_method_not_chargeable: [400, 'invalid_request_error'],
  currency_mismatch: [400, 'invalid_request_error'],
  amount_too_small: [400, 'invalid_request_error'],
  lines_total_mismatch: [400, 'invalid_request_error'],
  provider_error: [400, 'invalid_request_error'],
  event_name_taken: [400, 'invalid_request_error'],
  no_meter_found: [400, 'invalid_request_error'],
  meter_inactive: [400, 'invalid_request_error'],
  invalid_payload: [400, 'invalid_request_error'],
  timestamp_out_of_range: [400, 'invalid_request_error'],
  offer_unavailable: [400, 'invalid_request_error'],
  pack_unavailable: [400, 'invalid_request_error'],
  currency_unsupported: [400, 'invalid_request_error'],
  mode_mismatch: [400, 'invalid_request_error'],
  coupon_invalid: [400, 'invalid_request_error'],
  checkout_session_not_open: [400, 'invalid_request_error'],
  portal_disabled: [400, 'invalid_request_error'],
  portal_unavailable: [400, 'invalid_request_error'],
  invalid_event_type: [400, 'invalid_request_error'],
  private_host: [400, 'invalid_request_error'],
  invalid_url: [400, 'invalid_request_error'],
  test_clock_advancing: [400, 'invalid_request_error'],
  test_clock_limit: [400, 'invalid_request_error'],
  test_payments_unavailable: [400, 'invalid_request_error'],
  order_not_refundable: [400, 'invalid_request_error'],
  refund_amount_too_large: [400, 'invalid_request_error'],
  refund_failed: [400, 'invalid_request_error'],
} as const satisfies Record<string, readonly [number, ErrorType]>;

export type ErrorCode = keyof typeof CODES;
export const ERROR_CODES = Object.keys(CODES) as ErrorCode[];

export function statusOf(code: ErrorCode): number {
  return CODES[code][0];
}

export function errorTypeOf(code: ErrorCode): ErrorType {
  return CODES[code][1];
}

export interface ApiErrorOptions {
  param?: string | null;
  /** Overrides the type of the code's row (card declines use any provider code with card_error). */
  type?: ErrorType;
  status?: number;
  /** Extra members of the error object, such as `subscription_charge` on a decline. */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode | string, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    const row = (CODES as Record<string, readonly [number, ErrorType]>)[code];
    this.status = options.status ?? row?.[0] ?? 400;
    this.type = options.type ?? row?.[1] ?? 'invalid_request_error';
    this.param = options.param ?? null;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  toBody(docUrl: string) {
    return {
      error: {
        type: this.type,
        code: this.code,
        message: this.message,
        param: this.param,
        doc_url: docUrl,
        ...this.extra,
      },
    };
  }
}

export const missing = (param: string, message = `Missing required param: ${param}.`) => new ApiError('parameter_missing', message, { param });

export const invalid = (param: string, message: string) => new ApiError('parameter_invalid', message, { param });

export const notFound = (what: string, id: string, param = 'id') => new ApiError('resource_missing', `No such ${what}: '${id}'`, { param });
