// Event type patterns: `*` matches any run of characters; matching is linear, whatever the pattern.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { typeMatches, typesMatching } from '../../domain/event-catalogs';

/** The reference semantics, safe only for short inputs: a RegExp built from the pattern. */
function byRegExp(pattern: string, type: string): boolean {
  const escaped = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${escaped}$`).test(type);
}

describe('typeMatches', () => {
  it('matches the patterns merchants use', () => {
    expect(typeMatches('*', 'invoice.paid')).toBe(true);
    expect(typeMatches('invoice.*', 'invoice.paid')).toBe(true);
    expect(typeMatches('invoice.*', 'invoice')).toBe(false);
    expect(typeMatches('customer.subscription.*', 'customer.subscription.updated')).toBe(true);
    expect(typeMatches('*.paid', 'order.paid')).toBe(true);
    expect(typeMatches('*.paid', 'order.payment_failed')).toBe(false);
    expect(typeMatches('order.paid', 'order.paid')).toBe(true);
    expect(typeMatches('order.pai', 'order.paid')).toBe(false);
  });

  it('agrees with the RegExp semantics on random short patterns and types', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '.', '*'), maxLength: 8 });
    const type = fc.string({ unit: fc.constantFrom('a', 'b', '.'), maxLength: 10 });
    fc.assert(fc.property(text, type, (pattern, candidate) => typeMatches(pattern, candidate) === byRegExp(pattern, candidate)));
  });

  it('answers at once for the pattern that froze the API (40 stars then x), which no type matches', () => {
    const evil = `${'*'.repeat(40)}x`;
    expect(typeMatches(evil, 'customer.subscription.trial_will_end.aaaaaaaaaaaaaaaaaaaaaaaa')).toBe(false);
    expect(typesMatching(evil)).toEqual([]);
    expect(typeMatches(`${'*a'.repeat(50)}b`, 'a'.repeat(100))).toBe(false);
  });
});
