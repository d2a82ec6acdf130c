// What this tests: when a money-moving activity's try asks the provider by key before charging
// (activities/provider-call.ts). A regular activity's attempt count survives a dead worker; a local one
// restarts at 1 on the survivor, so a local try starting long after its charge was asked for looks up too.
import { MockActivityEnvironment } from '@temporalio/testing';
import { expect, it } from 'vitest';
import { LOCAL_TRY_LOOKS_UP_AFTER_MS, providerCall } from '../../activities/provider-call';

const lookedUp = (info: { attempt: number; isLocal: boolean }, askedAtMs?: number) =>
  new MockActivityEnvironment(info).run(() => Promise.resolve(providerCall(askedAtMs).retry));

it('a first try asked for just now charges under its key alone, local or not', async () => {
  expect(await lookedUp({ attempt: 1, isLocal: true }, Date.now())).toBe(false);
  expect(await lookedUp({ attempt: 1, isLocal: false }, Date.now())).toBe(false);
});

it('any attempt after the first looks the key up first', async () => {
  expect(await lookedUp({ attempt: 2, isLocal: true }, Date.now())).toBe(true);
  expect(await lookedUp({ attempt: 2, isLocal: false })).toBe(true);
});

it('a local attempt 1 starting past the bound after the charge was asked for (a survivor of a lost task) looks it up', async () => {
  const late = Date.now() - LOCAL_TRY_LOOKS_UP_AFTER_MS - 1_000;
  expect(await lookedUp({ attempt: 1, isLocal: true }, late)).toBe(true);
  // A regular activity's attempt 1 is a first try however late: the server counts its attempts.
  expect(await lookedUp({ attempt: 1, isLocal: false }, late)).toBe(false);
});
