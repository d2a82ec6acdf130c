// What this tests: plainMoney (domain/pricing.ts), the operator's "49.90 BRL": Intl's decimals per
// currency, remembered per code, and the bound on how many codes are remembered.
import { describe, expect, test } from 'vitest';
import { PLAIN_DIGITS_MAX, plainDigitsKnown, plainMoney } from '../../domain/pricing';

describe('plainMoney', () => {
  test("prints minor units with the currency's own decimals, the same on a second call", () => {
    for (let round = 0; round < 2; round++) {
      expect(plainMoney(4990, 'brl')).toBe('49.90 BRL');
      expect(plainMoney(500, 'JPY')).toBe('500 JPY');
      expect(plainMoney(1234, 'kwd')).toBe('1.234 KWD');
    }
  });

  test('remembers at most PLAIN_DIGITS_MAX currency codes however many distinct codes it is given', () => {
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    // Well-formed codes Intl accepts (unknown ones get two decimals): more than the bound.
    const codes = Array.from({ length: PLAIN_DIGITS_MAX + 100 }, (_, i) => `Q${letters[Math.floor(i / 26) % 26]}${letters[i % 26]}`);
    for (const code of codes) {
      expect(plainMoney(100, code)).toBe(`1.00 ${code}`);
      expect(plainDigitsKnown()).toBeLessThanOrEqual(PLAIN_DIGITS_MAX);
    }
    expect(plainMoney(4990, 'brl')).toBe('49.90 BRL');
  });
});
