// Phone numbers: international format, or a national number of the store's country; kept in E.164.
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

export function normalizePhone(raw: string, storeCountry: string): string | null {
  const phone = parsePhoneNumberFromString(raw.trim(), storeCountry.toUpperCase() as CountryCode);
  if (!phone || !phone.isValid()) return null;
  return phone.number;
}
