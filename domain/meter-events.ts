// Rules of meters and meter events as sent (spec, Metered usage; event rules 1-4): event_name shape,
// identifier and payload limits, the customer and value keys (with the stripe_customer_id alias),
// and the timestamp window. Pure: the meter and the clock are passed in.
import { ApiError, invalid } from './errors';

export type MeterFormula = 'sum' | 'count' | 'last';
export const METER_FORMULAS: readonly MeterFormula[] = ['sum', 'count', 'last'];

export const EVENT_NAME_MAX = 100;
export const DISPLAY_NAME_MAX = 250;
export const IDENTIFIER_MAX = 100;
export const PAYLOAD_MAX_KEYS = 20;
export const PAYLOAD_KEY_MAX = 100;
export const PAYLOAD_VALUE_MAX = 500;
export const BATCH_MAX = 100;
/** Event timestamps: up to 35 days in the past and 5 minutes ahead of arrival. */
export const TIMESTAMP_PAST_SECONDS = 35 * 24 * 60 * 60;
export const TIMESTAMP_FUTURE_SECONDS = 5 * 60;
/** The alias accepted in the payload for the customer key (spec: stripe-style). */
export const CUSTOMER_KEY_ALIAS = 'stripe_customer_id';

const EVENT_NAME_RE = /^[a-z0-9_.-]+$/;
const PAYLOAD_KEY_RE = /^[A-Za-z0-9_.-]+$/;

export function validateEventName(name: string, param = 'event_name'): void {
  if (name.length === 0 || name.length > EVENT_NAME_MAX) throw invalid(param, `event_name is 1 to ${EVENT_NAME_MAX} characters.`);
  if (!EVENT_NAME_RE.test(name)) throw invalid(param, 'event_name may contain only a-z, 0-9, _, . and -.');
}

export function validatePayloadKey(key: string, param: string): void {
  if (key.length === 0 || key.length > PAYLOAD_KEY_MAX || !PAYLOAD_KEY_RE.test(key)) {
    throw invalid(param, `A payload key is 1 to ${PAYLOAD_KEY_MAX} characters of letters, digits, _, . and -.`);
  }
}

export type PayloadValue = string | number | boolean;
export type Payload = Record<string, PayloadValue>;

/** What every meter event needs, read from one item of the body (single call or batch). */
export interface EventShape {
  eventName: string;
  identifier: string | null;
  payload: Payload;
  timestamp: number | null;
}

const badPayload = (message: string, param = 'payload') => new ApiError('invalid_payload', message, { param });

/** Checks the item's shape: event_name, identifier, payload types and size, timestamp type. */
export function readEventShape(raw: unknown): EventShape {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('event', 'Each event is an object.');
  const item = raw as Record<string, unknown>;
  for (const key of Object.keys(item)) {
    if (!['event_name', 'identifier', 'payload', 'timestamp'].includes(key)) throw invalid(key, `Received unknown parameter: ${key}.`);
  }
  if (item.event_name === undefined || item.event_name === null || item.event_name === '') {
    throw new ApiError('parameter_missing', 'Missing required param: event_name.', { param: 'event_name' });
  }
  if (typeof item.event_name !== 'string') throw invalid('event_name', 'event_name is text.');
  let identifier: string | null = null;
  if (item.identifier !== undefined && item.identifier !== null) {
    if (typeof item.identifier !== 'string' || item.identifier.length === 0 || item.identifier.length > IDENTIFIER_MAX) {
      throw invalid('identifier', `identifier is text of 1 to ${IDENTIFIER_MAX} characters.`);
    }
    identifier = item.identifier;
  }
  if (item.payload === undefined || item.payload === null) {
    throw new ApiError('parameter_missing', 'Missing required param: payload.', { param: 'payload' });
  }
  if (typeof item.payload !== 'object' || Array.isArray(item.payload)) throw badPayload('payload is an object of keys and values.');
  const entries = Object.entries(item.payload as Record<string, unknown>);
  if (entries.length > PAYLOAD_MAX_KEYS) throw badPayload(`payload can have up to ${PAYLOAD_MAX_KEYS} keys.`);
  const payload: Payload = {};
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > PAYLOAD_KEY_MAX) throw badPayload(`payload keys are 1 to ${PAYLOAD_KEY_MAX} characters.`, `payload.${key}`);
    if (typeof value === 'string') {
      if (value.length > PAYLOAD_VALUE_MAX) throw badPayload(`payload values are up to ${PAYLOAD_VALUE_MAX} characters.`, `payload.${key}`);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw badPayload('payload numbers must be finite.', `payload.${key}`);
    } else if (typeof value !== 'boolean') {
      throw badPayload('payload values are text, numbers or booleans.', `payload.${key}`);
    }
    payload[key] = value as PayloadValue;
  }
  let timestamp: number | null = null;
  if (item.timestamp !== undefined && item.timestamp !== null && item.timestamp !== '') {
    // Form bodies send every value as text.
    const n = typeof item.timestamp === 'string' && /^-?\d+$/.test(item.timestamp) ? Number(item.timestamp) : item.timestamp;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw invalid('timestamp', 'timestamp is an integer of Unix seconds.');
    timestamp = n;
  }
  return { eventName: item.event_name, identifier, payload, timestamp };
}

/** Event rule 3: up to 35 days in the past, up to 5 minutes ahead; default arrival time. */
export function resolveTimestamp(timestamp: number | null, nowSeconds: number): number {
  if (timestamp === null) return nowSeconds;
  if (timestamp < nowSeconds - TIMESTAMP_PAST_SECONDS || timestamp > nowSeconds + TIMESTAMP_FUTURE_SECONDS) {
    throw new ApiError('timestamp_out_of_range', 'timestamp must be within the past 35 days and no more than 5 minutes in the future.', {
      param: 'timestamp',
    });
  }
  return timestamp;
}

export interface MeterKeys {
  formula: MeterFormula;
  customer_payload_key: string;
  value_payload_key: string;
}

/** The customer id an event names: the meter's key, else the stripe_customer_id alias. */
export function customerIdOf(payload: Payload, meter: MeterKeys): string {
  const value = payload[meter.customer_payload_key] ?? payload[CUSTOMER_KEY_ALIAS];
  if (value === undefined) {
    throw badPayload(`payload.${meter.customer_payload_key} (the customer id) is required.`, `payload.${meter.customer_payload_key}`);
  }
  if (typeof value !== 'string' || value.length === 0) {
    throw badPayload(`payload.${meter.customer_payload_key} is a customer id (text).`, `payload.${meter.customer_payload_key}`);
  }
  return value;
}

/** Event rule 2: the value added (sum) or kept (last); a count meter counts 1 and ignores it. */
export function valueOf(payload: Payload, meter: MeterKeys): number {
  if (meter.formula === 'count') return 1;
  const key = meter.value_payload_key;
  const raw = payload[key];
  if (raw === undefined) throw badPayload(`payload.${key} (the event's value) is required on a ${meter.formula} meter.`, `payload.${key}`);
  // Form bodies carry numbers as text.
  const n = typeof raw === 'string' && /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw.trim()) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw badPayload(`payload.${key} is a number.`, `payload.${key}`);
  return n;
}

/** payload.subscription_id, when the event picks its subscription (event rule 5). */
export function chosenSubscriptionOf(payload: Payload): string | null {
  const value = payload.subscription_id;
  return typeof value === 'string' && value.length > 0 ? value : null;
}
