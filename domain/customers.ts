// Customer input rules: email, name 3..120, phone (international or national of the store's country),
// identity document, address with its required parts. Pure: returns normalized fields or throws.
import { ApiError, invalid, missing } from './errors';
import { normalizeDocument, maskDocument, type DocumentType } from './documents';
import { normalizePhone } from './phone';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const COUNTRY = /^[A-Z]{2}$/;

export interface CustomerInput {
  email?: string;
  name?: string | null;
  phone?: string | null;
  document?: { type: DocumentType; number: string } | null;
  address?: AddressInput | null;
  locale?: string | null;
}

export interface AddressInput {
  line1?: string | null;
  line2?: string | null;
  number?: string | null;
  district?: string | null;
  city?: string | null;
  state?: string | null;
  postal_code?: string | null;
  country?: string | null;
}

export interface NormalizedCustomerFields {
  email?: string;
  name?: string;
  phone?: string;
  document?: { type: DocumentType; number: string; number_masked: string };
  address?: Record<string, string | null> | null;
  country?: string | null;
  locale?: string | null;
}

export function normalizeEmail(raw: string, param = 'email'): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) throw invalid(param, 'Invalid email address.');
  return email;
}

export function normalizeName(raw: string | null, param = 'name', min = 3): string {
  const name = (raw ?? '').trim();
  if (name.length < min || name.length > 120) throw invalid(param, `Name must be ${min} to 120 characters long.`);
  return name;
}

function normalizeAddress(input: AddressInput): Record<string, string | null> {
  const required = ['line1', 'city', 'state', 'postal_code', 'country'] as const;
  for (const field of required) {
    const value = input[field];
    if (value === undefined || value === null || String(value).trim() === '') throw missing(`address.${field}`);
  }
  const country = String(input.country).trim().toUpperCase();
  if (!COUNTRY.test(country)) throw invalid('address.country', 'Country must be an ISO 3166-1 alpha-2 code.');
  const text = (v: string | null | undefined) => (v === undefined || v === null || String(v).trim() === '' ? null : String(v).trim());
  return {
    line1: text(input.line1),
    line2: text(input.line2),
    number: text(input.number),
    district: text(input.district),
    city: text(input.city),
    state: text(input.state),
    postal_code: text(input.postal_code),
    country,
  };
}

/**
 * Normalizes the fields present in `input`. With `creating`, email, name, phone and document are
 * required; on update only what is sent changes. `nameMin` is lower for checkout buyers (a
 * session's customer_name may be 2 characters).
 */
/** What a store decides about its customers' fields: its country (national phone numbers) and whether CPF/CNPJ check digits are verified. */
export interface CustomerRules {
  country: string;
  verify_document_digits?: boolean;
}

export function normalizeCustomerInput(input: CustomerInput, rules: CustomerRules, creating: boolean, nameMin = 3): NormalizedCustomerFields {
  const storeCountry = rules.country;
  const out: NormalizedCustomerFields = {};
  if (creating) {
    for (const field of ['email', 'name', 'phone'] as const) {
      if (input[field] === undefined || input[field] === null) throw missing(field);
    }
    if (!input.document) throw missing('document');
  }
  if (input.email !== undefined) {
    if (input.email === null) throw invalid('email', 'Email cannot be removed.');
    out.email = normalizeEmail(input.email);
  }
  if (input.name !== undefined) out.name = normalizeName(input.name, 'name', nameMin);
  if (input.phone !== undefined) {
    if (input.phone === null) throw invalid('phone', 'Phone cannot be removed.');
    const phone = normalizePhone(input.phone, storeCountry);
    if (!phone) throw invalid('phone', `Invalid phone number for ${storeCountry}: use international format (+country code) or a national number.`);
    out.phone = phone;
  }
  if (input.document !== undefined) {
    if (input.document === null) throw invalid('document', 'Document cannot be removed.');
    if (!input.document.type) throw missing('document.type');
    if (!input.document.number) throw missing('document.number');
    const checked = normalizeDocument(input.document.type, input.document.number, rules.verify_document_digits === true);
    if (!checked.ok) throw invalid('document.number', `Document number ${checked.reason}.`);
    out.document = { type: input.document.type, number: checked.number, number_masked: maskDocument(checked.number) };
  }
  if (input.address !== undefined) {
    out.address = input.address === null ? null : normalizeAddress(input.address);
    out.country = out.address ? String(out.address.country) : null;
  }
  if (input.locale !== undefined) {
    if (input.locale !== null && !/^[a-z]{2}(-[A-Z]{2})?$/.test(input.locale)) {
      throw new ApiError('parameter_invalid', 'Locale is a language tag such as en, pt-BR or es.', { param: 'locale' });
    }
    out.locale = input.locale;
  }
  return out;
}

/** An e-mail address as operators see it in Temporal: "j***@example.com". */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}
