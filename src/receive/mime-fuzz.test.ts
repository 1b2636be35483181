// Property-based fuzzing of what a stranger sends to port 25: MIME headers and bodies of every shape (folding,
// encoded words, broken multiparts, odd encodings and charsets, 8-bit and bare line ends, DKIM-Signature fields
// by the dozen) and recipient addresses. For every input the listener answers 250 and stores exactly one message, or refuses
// with a 5xx and stores nothing; never a 4xx of ours, never a dropped session, and the box stays healthy.
// Bounded to about 20 s here; FUZZ_RUNS=N runs N cases per property; a failure prints the replaying seed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { request } from '../testkit/app.ts';
import { RawSmtp, type SmtpReply } from '../testkit/smtp-client.ts';
import { value } from '../db/query.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { trackedCases } from '../testkit/fuzz-cases.ts';

const RUNS = Number(process.env.FUZZ_RUNS) || 80;
// Long enough that a loaded machine still gets a few runs in: fast-check fails a property cut off before its first.
const TIME_LIMIT_MS = 15_000;
const cases = trackedCases();
let s: InboundScene;

// Many short sessions from 127.0.0.1, each with a few refusals: the per-client connection rate and error
// limits (tested in smtp/) would end them first; this file tests what the box does with the content.
test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0' } });
});
test.after(() => s.stop());

const storedCount = async () => Number(await s.t.app.store.read(value("SELECT count(*) FROM emails WHERE direction = 'in'")));

const lineEnd = fc.constantFrom('\r\n', '\r\n', '\r\n', '\n', '\r');
const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 });
const bytes = fc.string({ unit: 'binary', maxLength: 60 });
const fieldName = fc.oneof(fc.constantFrom('From', 'To', 'Cc', 'Subject', 'Date', 'Message-ID', 'In-Reply-To', 'References', 'Reply-To', 'Content-Type', 'Content-Transfer-Encoding', 'Content-Disposition', 'MIME-Version', 'List-Unsubscribe', 'DKIM-Signature', 'Received', 'Authentication-Results', 'ARC-Seal'), fc.stringMatching(/^[!-9;-~]{1,20}$/));
const encodedWord = fc.tuple(fc.constantFrom('utf-8', 'iso-8859-1', 'x-unknown', 'utf-7', ''), fc.constantFrom('B', 'Q', 'X'), printable).map(([cs, enc, text]) => `=?${cs}?${enc}?${enc === 'B' ? Buffer.from(text).toString('base64') : text}?=`);
const address = fc.oneof(fc.emailAddress(), printable, fc.constant(''), fc.constant('<>'), fc.tuple(printable, fc.emailAddress()).map(([n, a]) => `"${n}" <${a}>`), fc.constant('undisclosed-recipients:;'));
const fieldValue = fc.oneof(printable, bytes, encodedWord, address, fc.array(printable, { maxLength: 6 }).map((parts) => parts.join('\r\n\t')));
const field = fc.tuple(fieldName, fieldValue, lineEnd).map(([name, value, eol]) => `${name}: ${value}${eol}`);

const boundary = fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,40}$/);
const encoding = fc.constantFrom('7bit', '8bit', 'binary', 'base64', 'quoted-printable', 'x-uuencode', 'garbage');
const leafType = fc.constantFrom('text/plain', 'text/html', 'text/plain; charset=utf-8', 'text/plain; charset="x-nonsense"', 'application/octet-stream', 'image/png; name="../../x.png"', 'message/rfc822', 'message/delivery-status', 'text/calendar; method=REQUEST', 'application/pdf', '');
const leafBody = fc.oneof(printable, bytes, fc.base64String({ maxLength: 200 }), fc.constant('=\r\n=3D=ZZ=\n'), fc.constant('<script>alert(1)</script><a href="javascript:x">x</a>'));

// A MIME tree a few levels deep, with boundaries that sometimes do not match what the parts use.
const part: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(leafType, encoding, fc.array(field, { maxLength: 2 }), leafBody).map(([type, enc, extra, body]) => `Content-Type: ${type}\r\nContent-Transfer-Encoding: ${enc}\r\n${extra.join('')}\r\n${body}`),
    fc
      .tuple(fc.constantFrom('mixed', 'alternative', 'related', 'report', 'signed', 'digest'), boundary, fc.boolean(), fc.array(tie('node'), { maxLength: 3 }), fc.boolean())
      .map(([sub, b, lie, children, close]) => {
        const used = lie ? `${b}x` : b;
        return `Content-Type: multipart/${sub}; boundary="${b}"\r\n\r\npreamble\r\n${children.map((c) => `--${used}\r\n${c}\r\n`).join('')}${close ? `--${used}--\r\n` : ''}`;
      }),
  ),
})).node;

// DKIM-Signature fields with real tags in any mix (catalogue RES-06c, RES-09: signature-cap.ts picks which
// mailauth checks): algorithms, canonicalizations, l= lengths, h= lists long and short, tags missing or junk.
const tag = (name: string, value: fc.Arbitrary<string>) => fc.option(value.map((v) => `${name}=${v}`), { nil: undefined });
const dkimField = fc
  .tuple(
    tag('a', fc.constantFrom('rsa-sha256', 'ed25519-sha256', 'rsa-sha1', 'rsa-md5', '')),
    tag('c', fc.constantFrom('relaxed/relaxed', 'simple/simple', 'relaxed', 'simple/relaxed', 'x/y')),
    tag('d', fc.oneof(fc.constantFrom('sender.example', 'SENDER.example', 'other.example'), fc.domain())),
    tag('s', fc.stringMatching(/^[a-z0-9]{1,12}$/)),
    tag('l', fc.oneof(fc.nat({ max: 100_000 }).map(String), fc.constantFrom('-1', 'x', '99999999999999999999'))),
    tag('h', fc.oneof(fc.constantFrom('from:to:subject', 'From', ''), fc.nat({ max: 3_000 }).map((n) => Array.from({ length: n }, (_, i) => (i % 2 ? 'from' : `x-${i}`)).join(':')))),
    tag('bh', fc.base64String({ maxLength: 44 })),
    tag('b', fc.base64String({ maxLength: 120 })),
  )
  .map((tags) => `DKIM-Signature: v=1; ${tags.filter((t) => t !== undefined).join('; ')}\r\n`);

const message = fc
  .tuple(fc.array(field, { maxLength: 12 }), fc.array(dkimField, { maxLength: 30 }), fc.boolean(), part)
  .map(([fields, signatures, withFrom, body]) => `${signatures.join('')}${withFrom ? 'From: fuzz@sender.example\r\n' : ''}${fields.join('')}${body}`);

/** RFC 5321 4.5.2: a line starting with "." gets another; the end is CRLF.CRLF after a final line end. */
const dataOf = (raw: string) => Buffer.from(`${raw.replace(/(^|\r\n)\./g, '$1..')}${raw.endsWith('\r\n') ? '' : '\r\n'}.\r\n`, 'latin1');

async function sendOne(smtp: RawSmtp, raw: string): Promise<SmtpReply> {
  assert.is((await smtp.command('MAIL FROM:<fuzz@sender.example>')).code, 250);
  assert.is((await smtp.command(`RCPT TO:<${s.inbox.address}>`)).code, 250);
  const data = await smtp.command('DATA');
  if (data.code !== 354) return data;
  smtp.write(dataOf(raw));
  return smtp.read(30_000);
}

test('any MIME message: 250 and stored once, or a 5xx and nothing stored; never a 4xx of ours', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 4 }), cases.track(async (messages) => {
      const smtp = await RawSmtp.open(s.t.smtpPort);
      try {
        await smtp.read();
        await smtp.command('EHLO fuzz.sender.example');
        for (const raw of messages) {
          const before = await storedCount();
          const reply = await sendOne(smtp, raw);
          if (reply.code === 250) {
            const after = await storedCount();
            if (after !== before + 1) throw new Error(`250 but ${after - before} stored for ${JSON.stringify(raw).slice(0, 400)}`);
          } else if (reply.code >= 500) {
            if ((await storedCount()) !== before) throw new Error(`${reply.code} but stored for ${JSON.stringify(raw).slice(0, 400)}`);
            await smtp.command('RSET');
          } else {
            throw new Error(`${reply.code} ${reply.text} for ${JSON.stringify(raw).slice(0, 400)}`);
          }
        }
        await smtp.command('QUIT');
      } finally {
        smtp.close();
      }
    })),
    { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
  );
  await cases.settled();
  const errors = s.t.logs.filter((l) => l.includes('"level":"error"'));
  assert.equal(errors, [], 'nothing the fuzzer sent was our fault');
});

test('any recipient: accepted only for the inbox itself, otherwise refused with a 5xx; the session goes on', async () => {
  const [local, domain] = s.inbox.address.split('@');
  const variants = fc.constantFrom(`${local}@${domain}`, `${local.toUpperCase()}@${domain.toUpperCase()}`, `${local}%evil.example@${domain}`, `evil.example!${local}@${domain}`, `"${local}@evil.example"@${domain}`, `@${domain}:${local}@evil.example`, `${local}@[127.0.0.1]`, `${local}@${domain}.evil.example`);
  const rcpt = fc.oneof(variants, fc.emailAddress(), printable, bytes);
  await fc.assert(
    fc.asyncProperty(fc.array(rcpt, { minLength: 1, maxLength: 6 }), cases.track(async (recipients) => {
      const smtp = await RawSmtp.open(s.t.smtpPort);
      try {
        await smtp.read();
        await smtp.command('EHLO fuzz.sender.example');
        assert.is((await smtp.command('MAIL FROM:<fuzz@sender.example>')).code, 250);
        for (const r of recipients) {
          if (/[\r\n]/.test(r)) continue; // a line break ends the command: that is another command, not a recipient
          const reply = await smtp.command(`RCPT TO:<${r}>`);
          const mine = r.toLowerCase() === s.inbox.address;
          if (mine ? reply.code !== 250 : reply.code === 250 || reply.code < 500) throw new Error(`RCPT TO:<${r}> got ${reply.code} ${reply.text}`);
        }
        assert.is((await smtp.command('NOOP')).code, 250, 'the session is still there');
      } finally {
        smtp.close();
      }
    })),
    { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
  );
  await cases.settled();
  assert.is((await request(`${s.t.url}/healthz`)).status, 200);
});

test.run();
