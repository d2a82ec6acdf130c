// Customer identity documents: cpf, cnpj, passport, tax_id. Dots and dashes are removed (and spaces,
// and the slash of a formatted CNPJ); a CPF is 11 digits, a CNPJ 14, their check digits verified only
// where the store asks for it (the spec accepts any number of that shape).

export const DOCUMENT_TYPES = ['cpf', 'cnpj', 'passport', 'tax_id'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

function allSame(digits: string): boolean {
  return /^(\d)\1*$/.test(digits);
}

export function isValidCpf(cpf: string): boolean {
  if (!/^\d{11}$/.test(cpf) || allSame(cpf)) return false;
  const digits = cpf.split('').map(Number);
  for (const length of [9, 10]) {
    let sum = 0;
    for (let i = 0; i < length; i++) sum += digits[i] * (length + 1 - i);
    const check = ((sum * 10) % 11) % 10;
    if (check !== digits[length]) return false;
  }
  return true;
}

export function isValidCnpj(cnpj: string): boolean {
  if (!/^\d{14}$/.test(cnpj) || allSame(cnpj)) return false;
  const digits = cnpj.split('').map(Number);
  const weights = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
  for (const length of [12, 13]) {
    let sum = 0;
    const w = weights.slice(13 - length);
    for (let i = 0; i < length; i++) sum += digits[i] * w[i];
    const rest = sum % 11;
    const check = rest < 2 ? 0 : 11 - rest;
    if (check !== digits[length]) return false;
  }
  return true;
}

export type DocumentCheck = { ok: true; number: string } | { ok: false; reason: string };

/** A CPF or CNPJ: its digit count, then its check digits when `verifyDigits`. */
function checkTaxNumber(number: string, digits: number, valid: (n: string) => boolean, verifyDigits: boolean, name: string): DocumentCheck {
  if (!new RegExp(`^\\d{${digits}}$`).test(number)) return { ok: false, reason: `must be the ${digits} digits of a ${name}` };
  if (verifyDigits && !valid(number)) return { ok: false, reason: `is not a valid ${name} (check digits)` };
  return { ok: true, number };
}

export function normalizeDocument(type: DocumentType, raw: string, verifyDigits = false): DocumentCheck {
  const stripped = raw.replace(/[.\-\s]/g, '').replace(type === 'cnpj' ? /\//g : /$^/, '');
  switch (type) {
    case 'cpf':
      return checkTaxNumber(stripped, 11, isValidCpf, verifyDigits, 'CPF');
    case 'cnpj':
      return checkTaxNumber(stripped, 14, isValidCnpj, verifyDigits, 'CNPJ');
    case 'passport':
      return /^[A-Za-z0-9]{5,20}$/.test(stripped)
        ? { ok: true, number: stripped.toUpperCase() }
        : { ok: false, reason: 'must be 5 to 20 letters and digits' };
    case 'tax_id':
      return /^[A-Za-z0-9]{4,30}$/.test(stripped)
        ? { ok: true, number: stripped.toUpperCase() }
        : { ok: false, reason: 'must be 4 to 30 letters and digits' };
  }
}

/** Only the last four characters stay visible. */
export function maskDocument(number: string): string {
  return '*'.repeat(Math.max(0, number.length - 4)) + number.slice(-4);
}
