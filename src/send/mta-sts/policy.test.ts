// The MTA-STS policy file (RFC 8461 3.2), its mx patterns (4.1) and the two TXT records (RFC 8461 3.1,
// RFC 8460 3) as the box reads them: strict where the RFCs are, lenient where they say to ignore.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mxAllowed, parsePolicy, PolicyInvalid } from './policy.ts';
import { parseStsRecord, parseTlsRptRecord } from './records.ts';

test('a policy with CRLF or LF lines, unknown keys and a wildcard parses', () => {
  const policy = parsePolicy('version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\nmx: *.Backup.Example.com.\nmax_age: 604800\nextension: ignored\n');
  assert.equal(policy, { mode: 'enforce', maxAge: 604800, mx: ['mail.example.com', '*.backup.example.com'] });
});

test('a policy is refused for its first problem, by name', () => {
  const refused = (text: string) => {
    try {
      parsePolicy(text);
    } catch (err) {
      assert.instance(err, PolicyInvalid);
      return (err as Error).message;
    }
    assert.unreachable(`accepted ${JSON.stringify(text)}`);
  };
  assert.is(refused('version: STSv2\nmode: enforce\nmx: a.example\nmax_age: 1'), 'version must be STSv1, got "STSv2"');
  assert.is(refused('version: STSv1\nmode: strict\nmx: a.example\nmax_age: 1'), 'mode must be enforce, testing or none, got "strict"');
  assert.is(refused('version: STSv1\nmode: enforce\nmx: a.example\nmax_age: -5'), 'max_age must be a number of seconds, got "-5"');
  assert.is(refused('version: STSv1\nmode: enforce\nmx: a.example\nmax_age: 12345678901'), 'max_age must be a number of seconds, got "12345678901"');
  assert.is(refused('version: STSv1\nmode: enforce\nmax_age: 86400'), 'a policy in mode enforce must name at least one mx');
  assert.is(refused('version: STSv1\nmode: enforce\nmx: *.*.example.com\nmax_age: 86400'), 'mx "*.*.example.com" is not a host name or a *. wildcard');
  assert.is(refused('<html>not found</html>'), 'line "<html>not found</html>" is not "key: value"');
});

test('max_age is capped at a year; mode none needs no mx', () => {
  assert.is(parsePolicy('version: STSv1\nmode: testing\nmx: a.example\nmax_age: 9999999999').maxAge, 31_557_600);
  assert.equal(parsePolicy('version: STSv1\nmode: none\nmax_age: 86400').mx, []);
});

test('a *. pattern stands for exactly one leftmost label (RFC 8461 4.1)', () => {
  const policy = { mx: ['*.example.com', 'mx.other.test'] };
  assert.ok(mxAllowed(policy, 'mx1.example.com'));
  assert.ok(mxAllowed(policy, 'MX.Other.Test.'));
  assert.not.ok(mxAllowed(policy, 'example.com'));
  assert.not.ok(mxAllowed(policy, 'a.b.example.com'));
  assert.not.ok(mxAllowed(policy, 'mx.other.test.evil'));
});

test('the _mta-sts TXT: one v=STSv1 record with an id, others ignored', () => {
  assert.equal(parseStsRecord(['v=STSv1; id=20160831085700Z;']), { id: '20160831085700Z' });
  assert.equal(parseStsRecord(['some other record', 'v=STSv1;id=abc']), { id: 'abc' });
  assert.is(parseStsRecord(['v=STSv1; id=a', 'v=STSv1; id=b']), null, 'two records: no policy (RFC 8461 3.1)');
  assert.is(parseStsRecord(['v=STSv1; id=not-alnum']), null);
  assert.is(parseStsRecord(['v=STSv10; id=a']), null);
});

test('the _smtp._tls TXT: its mailto: and https: rua', () => {
  assert.equal(parseTlsRptRecord(['v=TLSRPTv1; rua=mailto:tls@example.com,https://r.example.com/tlsrpt']), { rua: ['mailto:tls@example.com', 'https://r.example.com/tlsrpt'] });
  assert.equal(parseTlsRptRecord(['v=TLSRPTv1;rua=http://plain.example, mailto:x@example.com']), { rua: ['mailto:x@example.com'] });
  assert.is(parseTlsRptRecord(['v=TLSRPTv1;']), null);
  assert.is(parseTlsRptRecord(['v=TLSRPTv1; rua=mailto:a@x.example', 'v=TLSRPTv1; rua=mailto:b@x.example']), null);
});

test.run();
