// When a certificate is renewed and how long a failure waits (policy.ts), and what status.json keeps of a chain.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { backoffMs, due, renewAt } from './policy.ts';
import type { NameStatus } from './stored.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

test('renewal comes at two thirds of the lifetime: day 60 of a 90-day certificate', () => {
  assert.is(renewAt(0, 90 * DAY), 60 * DAY);
  assert.is(renewAt(1000, 1000 + 3 * HOUR), 1000 + 2 * HOUR);
});

test('failures wait 1 h, doubling, at most a day', () => {
  assert.equal([1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffMs(n) / HOUR), [1, 2, 4, 8, 16, 24, 24, 24]);
});

test('a name is due with no certificate or past its renewal time, never inside a backoff', () => {
  const held = (renew: number, retryAt: number | null = null): NameStatus => ({
    name: 'mx.example.com',
    certificate: { names: ['mx.example.com'], issuer: 'R3', serial: '01', notBefore: new Date(0).toISOString(), expiresAt: new Date(90 * DAY).toISOString(), renewAt: new Date(renew).toISOString() },
    lastError: null,
    failures: retryAt === null ? 0 : 1,
    retryAt: retryAt === null ? null : new Date(retryAt).toISOString(),
  });
  assert.ok(due(undefined, 0), 'nothing held yet');
  assert.not.ok(due(held(60 * DAY), 59 * DAY));
  assert.ok(due(held(60 * DAY), 60 * DAY));
  assert.not.ok(due(held(60 * DAY, 61 * DAY), 60.5 * DAY), 'waiting out a backoff');
  assert.ok(due(held(60 * DAY, 61 * DAY), 61 * DAY));
  assert.not.ok(due({ ...held(0, 2 * HOUR), certificate: null }, HOUR), 'a first order that failed waits too');
});

test.run();
