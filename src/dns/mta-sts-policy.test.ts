// The policy text and id the box publishes (RFC 8461 3.1, 3.2) and the reading of a fetched policy the checks use.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mxMatches, parsePolicy, policyId, policyText, stsRecordId } from './mta-sts-policy.ts';

test('the policy is CRLF key/value lines; its id is 1-32 alphanumerics that change with the text', () => {
  const testing = policyText({ mode: 'testing', mx: 'mx.example.com' });
  assert.is(testing, 'version: STSv1\r\nmode: testing\r\nmx: mx.example.com\r\nmax_age: 604800\r\n');
  const ids = [testing, policyText({ mode: 'enforce', mx: 'mx.example.com' }), policyText({ mode: 'testing', mx: 'mail.example.com' })].map(policyId);
  for (const id of ids) assert.match(id, /^[A-Za-z0-9]{1,32}$/);
  assert.is(new Set(ids).size, 3);
  assert.is(policyId(testing), ids[0], 'the same text, the same id');
});

test('a fetched policy is read as a sender reads it', () => {
  assert.equal(parsePolicy('version: STSv1\nmode: enforce\nmx: MX1.example.com\nmx: *.example.net\nmax_age: 86400\nextension: x\n'), {
    version: 'STSv1',
    mode: 'enforce',
    mx: ['mx1.example.com', '*.example.net'],
    maxAge: 86400,
  });
  assert.equal(parsePolicy('<html>not a policy</html>'), { version: null, mode: null, mx: [], maxAge: null });
  assert.is(parsePolicy('max_age: soon').maxAge, null);
});

test('an mx pattern names a host exactly, or one label under a wildcard (RFC 8461 4.1)', () => {
  assert.ok(mxMatches('mx.example.com', 'MX.example.com.'));
  assert.ok(mxMatches('*.example.com', 'mx.example.com'));
  assert.not.ok(mxMatches('*.example.com', 'a.mx.example.com'));
  assert.not.ok(mxMatches('*.example.com', 'example.com'));
  assert.not.ok(mxMatches('mx.example.com', 'mx.example.com.evil.test'));
});

test('the id of an STSv1 record, or null', () => {
  assert.is(stsRecordId('v=STSv1; id=20260101T000000;'), '20260101T000000');
  assert.is(stsRecordId('v=STSv1;id=abc'), 'abc');
  assert.is(stsRecordId('v=STSv1; id=not-alnum;'), null);
  assert.is(stsRecordId('v=STSv1;'), null);
  assert.is(stsRecordId('v=spf1 -all'), null);
  assert.is(stsRecordId(`v=STSv1; id=${'a'.repeat(33)};`), null);
});

test.run();
