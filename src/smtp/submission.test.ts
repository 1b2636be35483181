// SMTP submission end to end: real SMTP sessions (nodemailer, as applications send, and RawSmtp for the exact
// replies) to the box's submission listener, then the queue, DKIM signing and delivery to the test kit's sink
// as the recipients' MX, found through the kit's DNS server. Asserts what a sender checks: the replies, the
// bytes that arrive, the signature against the key in DNS, the envelope, the events.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTransport } from 'nodemailer';
import { simpleParser } from 'mailparser';
import { createKey, findKeyBySecret, revokeKey } from '../account/keys.ts';
import { freePort, request, startTestApp } from '../testkit/app.ts';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { plainAuth, RawSmtp, submissionSession } from '../testkit/smtp-client.ts';
import { column, get, value } from '../db/query.ts';

const MAX_BYTES = 1024 * 1024;
let s: OutboundScene;
let port: number;

test.before(async () => {
  s = await startOutboundScene({
    env: { MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_RETRY_SCHEDULE: '10m', MAILWRIGHT_MAX_MESSAGE_BYTES: String(MAX_BYTES) },
  });
  port = s.t.submissionPort!;
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

type TransportOptions = Parameters<typeof createTransport>[0] & Record<string, unknown>;
/** nodemailer as an application would set it up: STARTTLS required, any user name, the API key as password. */
const transport = (opts: Record<string, unknown> = {}) =>
  createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    name: 'app.example',
    auth: { user: 'anything', pass: s.key },
    ...opts,
  } as TransportOptions);

const b64 = (text: string) => Buffer.from(text).toString('base64');
const queuedId = (response: string) => /^250 2\.0\.0 Ok: queued as (em_[0-9A-Z]{26})$/.exec(response)?.[1];
const deliveredTo = (recipient: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(recipient)), 10_000, `a message for ${recipient}`);
const emailCount = async () => Number(await s.t.app.store.read(value('SELECT count(*) FROM emails')));
interface Refused {
  responseCode?: number;
  response?: string;
}
/** The error of a send or verify that must fail. */
const refusal = (p: Promise<unknown>): Promise<Refused> =>
  p.then(
    (ok) => {
      throw new Error(`accepted: ${JSON.stringify(ok)}`);
    },
    (err: Refused) => err,
  );

/** A RawSmtp session past EHLO, STARTTLS and EHLO again; authenticated with `key` unless it is null. */
const session = (key: string | null = s.key) => submissionSession(port, key);

test('before STARTTLS, AUTH is neither offered nor accepted and MAIL is refused; after it, AUTH PLAIN and LOGIN are', async () => {
  const c = await RawSmtp.open(port);
  const greeting = await c.read();
  assert.is(greeting.code, 220);
  assert.match(greeting.text, /^mx\.mailwright\.test /);
  const ehlo = await c.command('EHLO client.example');
  assert.ok(ehlo.lines.some((l) => l.slice(4) === 'STARTTLS'), ehlo.text);
  assert.not.ok(ehlo.lines.some((l) => l.slice(4).startsWith('AUTH')), 'no AUTH offered in clear');
  const auth = await c.command(`AUTH PLAIN ${plainAuth(s.key)}`);
  assert.ok(auth.code >= 500 && auth.code < 600, `AUTH in clear is refused: ${auth.code} ${auth.text}`);
  const mail = await c.command('MAIL FROM:<a@sender.test>');
  assert.is(mail.code, 530);
  assert.is(mail.text, '5.7.0 Must issue a STARTTLS command first');

  assert.is((await c.command('STARTTLS')).code, 220);
  const tls = await c.startTls('mx.mailwright.test');
  assert.is(tls.getPeerCertificate().subject.CN, 'mx.mailwright.test', 'the box certificate');
  const after = await c.command('EHLO client.example');
  assert.ok(after.lines.some((l) => l.slice(4) === 'AUTH PLAIN LOGIN'), after.text);
  assert.ok(after.lines.some((l) => l.slice(4) === `SIZE ${MAX_BYTES}`), after.text);
  const unauthenticated = await c.command('MAIL FROM:<a@sender.test>');
  assert.is(unauthenticated.code, 530);
  assert.match(unauthenticated.text, /^5\.7\.0 Authentication required/);
  assert.is((await c.command('AUTH CRAM-MD5')).code, 504, 'only PLAIN and LOGIN');
  c.close();
});

test('a wrong key gets 535 5.7.8 over PLAIN and LOGIN; the right one gets 235 over both', async () => {
  const c = await session(null);
  const wrong = await c.command(`AUTH PLAIN ${plainAuth(`re_${'x'.repeat(32)}`)}`);
  assert.is(wrong.code, 535);
  assert.match(wrong.text, /^5\.7\.8 Authentication credentials invalid/);
  assert.is((await c.command('AUTH LOGIN')).code, 334);
  assert.is((await c.command(b64('anything'))).code, 334);
  assert.is((await c.command(b64('not a key at all'))).code, 535);
  assert.is((await c.command(`AUTH PLAIN ${plainAuth(s.key, 'whoever')}`)).code, 235, 'any user name');
  c.close();

  const login = await session(null);
  assert.is((await login.command('AUTH LOGIN')).code, 334);
  assert.is((await login.command(b64('apikey'))).code, 334);
  assert.is((await login.command(b64(s.key))).code, 235);
  login.close();
});

test('a message sent with nodemailer is signed, delivered to its envelope and recorded like an API send', async () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
  const pdf = Buffer.from('%PDF-1.4 fake pdf bytes \u0000\u0001\u0002');
  const info = await transport().sendMail({
    from: 'Ada from Sender <ada@sender.test>',
    to: 'one@dest.test',
    cc: 'two@dest.test',
    bcc: 'hidden@dest.test',
    replyTo: 'replies@sender.test',
    subject: 'Hello over SMTP ✓',
    text: 'Hi there',
    html: '<p>Hi <b>there</b> <img src="cid:logo@sender.test"></p>',
    headers: { 'X-Entity-Ref-ID': 'abc-123', 'X-Mailer': 'should not pass', 'User-Agent': 'neither' },
    attachments: [
      { filename: 'report ü.pdf', content: pdf, contentType: 'application/pdf' },
      { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@sender.test' },
    ],
  });
  const id = queuedId(info.response);
  assert.ok(id, info.response);

  const m = await deliveredTo('one@dest.test');
  assert.equal([...m.rcptTo].sort(), ['hidden@dest.test', 'one@dest.test', 'two@dest.test']);
  assert.match(m.mailFrom, /^b-em_[0-9a-z]{26}-[0-9a-f]{12}@bounces\.sender\.test$/, 'the VERP return path, as for an API send');
  const dkim = await s.dkim(m.raw);
  assert.equal([dkim.status, dkim.signingDomain], ['pass', 'sender.test'], 'signed with the key published in DNS');

  // skipImageLinks: keep cid: links as they are, rather than turned into data: URLs.
  const parsed = await simpleParser(m.raw, { skipImageLinks: true });
  assert.is(parsed.messageId, `<${id!.slice(3).toLowerCase()}@sender.test>`, 'the box assigns the Message-ID');
  assert.is(parsed.subject, 'Hello over SMTP ✓');
  assert.is(parsed.from?.text, '"Ada from Sender" <ada@sender.test>');
  assert.is(parsed.headers.get('x-entity-ref-id'), 'abc-123');
  assert.not.ok(parsed.headers.has('x-mailer') || parsed.headers.has('user-agent'), 'client-added headers stay behind');
  assert.not.ok(m.raw.toString('latin1').toLowerCase().includes('hidden@dest.test'), 'Bcc is not in the headers');
  assert.is((parsed.replyTo?.value ?? [])[0]?.address, 'replies@sender.test');
  assert.match(parsed.text ?? '', /Hi there/);
  assert.match(String(parsed.html), /cid:logo@sender\.test/);
  const byName = new Map(parsed.attachments.map((a) => [a.filename, a]));
  assert.ok(byName.get('report ü.pdf')?.content.equals(pdf), 'the PDF arrives byte for byte');
  const logo = byName.get('logo.png');
  assert.equal([logo?.cid, logo?.contentDisposition, logo?.content.equals(png)], ['logo@sender.test', 'inline', true], 'the inline image keeps its Content-ID');

  const email = (await request(`${s.t.api}/emails/${id}`, { key: s.key })).body;
  assert.equal([email.to, email.cc, email.bcc].map((l: Array<{ address: string }>) => l.map((a) => a.address)), [['one@dest.test'], ['two@dest.test'], ['hidden@dest.test']]);
  const events = await eventually(async () => {
    const e = await s.events(id!);
    return e.filter((x) => x.type === 'delivered').length === 3 && e;
  });
  assert.equal(events.filter((e) => e.type === 'sent').map((e) => e.recipient).sort(), ['hidden@dest.test', 'one@dest.test', 'two@dest.test']);
});

test('the envelope decides who gets it: header-only addresses are shown, not delivered; envelope-only ones are Bcc', async () => {
  const info = await transport().sendMail({
    from: 'a@sender.test',
    to: ['shown@dest.test', 'header-only@dest.test'],
    subject: 'envelope',
    text: 'x',
    envelope: { from: 'bounces@elsewhere.test', to: ['shown@dest.test', 'env-only@dest.test'] },
  });
  const id = queuedId(info.response)!;
  const m = await deliveredTo('shown@dest.test');
  assert.equal([...m.rcptTo].sort(), ['env-only@dest.test', 'shown@dest.test']);
  const to = (await simpleParser(m.raw)).to;
  assert.equal((Array.isArray(to) ? to : [to]).flatMap((t) => t?.value.map((v) => v.address) ?? []), ['shown@dest.test', 'header-only@dest.test']);
  const recipients = await s.t.app.store.read(column('SELECT recipient FROM deliveries WHERE email_id = ? ORDER BY recipient', id));
  assert.equal(recipients, ['env-only@dest.test', 'shown@dest.test'], 'no delivery for the header-only address');
  const email = (await request(`${s.t.api}/emails/${id}`, { key: s.key })).body;
  assert.equal(email.bcc.map((a: { address: string }) => a.address), ['env-only@dest.test']);
});

test('AUTH LOGIN and a raw dialogue: the 250 names the email; the envelope sender is replaced by the VERP address', async () => {
  const c = await session(null);
  assert.is((await c.command('AUTH LOGIN')).code, 334);
  assert.is((await c.command(b64('anything'))).code, 334);
  assert.is((await c.command(b64(s.key))).code, 235);
  assert.is((await c.command('MAIL FROM:<someone@elsewhere.test>')).code, 250);
  assert.is((await c.command('RCPT TO:<raw@dest.test>')).code, 250);
  assert.is((await c.command('DATA')).code, 354);
  const done = await c.command(['From: Raw <raw-sender@sender.test>', 'To: raw@dest.test', 'Subject: raw', '', 'typed by hand', '.'].join('\r\n'));
  assert.is(done.code, 250);
  const id = /^2\.0\.0 Ok: queued as (em_[0-9A-Z]{26})$/.exec(done.text)?.[1];
  assert.ok(id, done.text);
  assert.is((await c.command('QUIT')).code, 221);
  const m = await deliveredTo('raw@dest.test');
  assert.match(m.mailFrom, /@bounces\.sender\.test$/);
  assert.match((await simpleParser(m.raw)).text ?? '', /typed by hand/);
  assert.is((await s.dkim(m.raw)).status, 'pass');
  assert.ok(await s.t.app.store.read(get('SELECT 1 FROM emails WHERE id = ?', id)), 'the email exists under the id in the reply');
});

test('refusals name the problem and queue nothing: unverified domain, From missing or doubled, injected Subject, long header, size, recipients', async () => {
  const before = await emailCount();
  const tx = transport();
  const unverified = await refusal(tx.sendMail({ from: 'a@other.test', to: 'x@dest.test', subject: 's', text: 't' }));
  assert.is(unverified.responseCode, 550);
  assert.match(String(unverified.response), /^550 5\.7\.1 The domain other\.test is not verified in this workspace/);

  const raw = (lines: string[]) => refusal(tx.sendMail({ envelope: { from: 'a@sender.test', to: ['x@dest.test'] }, raw: [...lines, '', 'body'].join('\r\n') }));
  const cases: Array<[string[], RegExp]> = [
    [['To: x@dest.test', 'Subject: no from'], /^554 5\.6\.0 From: is missing/],
    [['From: a@sender.test', 'From: b@sender.test', 'To: x@dest.test', 'Subject: two'], /^554 5\.6\.0 From: holds 2 addresses/],
    [['From: a@sender.test', 'To: x@dest.test', `Subject: =?UTF-8?B?${b64('hi\r\nBcc: victim@evil.test')}?=`], /^554 5\.6\.0 Subject: must not contain CR, LF/],
    [['From: a@sender.test', 'To: x@dest.test', 'Subject: s', `X-Long: ${'v'.repeat(2001)}`], /^554 5\.6\.0 header x-long: is longer than 2000/],
    [['From: a@sender.test', 'To: ü@dest.test', 'Subject: s'], /^554 5\.6\.0 To: "ü@dest\.test" has a local part/],
  ];
  for (const [lines, reply] of cases) {
    const err = await raw(lines);
    assert.match(String(err.response), reply, lines.join(' | '));
  }

  const c = await session();
  assert.is((await c.command('MAIL FROM:<a@sender.test>')).code, 250);
  const literal = await c.command('RCPT TO:<u@[192.0.2.1]>');
  assert.is(literal.code, 553, literal.text);
  assert.match(literal.text, /^5\.1\.3 /);
  for (let i = 0; i < 100; i++) assert.is((await c.command(`RCPT TO:<r${i}@dest.test>`)).code, 250);
  assert.is((await c.command('RCPT TO:<r100@dest.test>')).code, 452, 'at most 100 recipients');
  assert.is((await c.command('DATA')).code, 354);
  c.write(`From: a@sender.test\r\nSubject: big\r\n\r\n${`${'x'.repeat(998)}\r\n`.repeat(1100)}`);
  const big = await c.command('.');
  assert.is(big.code, 552);
  assert.match(big.text, /^5\.3\.4 Message too big/);
  c.close();
  assert.is(await emailCount(), before, 'nothing was stored or queued');
});

test('Idempotency-Key: a replay gets 250 with the same id and no second email; another message with the key is refused', async () => {
  const tx = transport();
  const mail = { from: 'a@sender.test', to: 'idem@dest.test', subject: 'once', text: 'only once', headers: { 'Idempotency-Key': 'smtp-order-42' } };
  const first = queuedId((await tx.sendMail(mail)).response);
  // nodemailer composes again: a new Message-ID, Date and boundaries, the same message.
  const again = queuedId((await tx.sendMail({ ...mail })).response);
  assert.ok(first);
  assert.is(again, first);
  const changed = await refusal(tx.sendMail({ ...mail, subject: 'changed' }));
  assert.match(String(changed.response), /^554 5\.6\.0 Idempotency-Key: already used with a different message/);
  const otherEnvelope = await refusal(tx.sendMail({ ...mail, envelope: { from: 'a@sender.test', to: ['idem@dest.test', 'more@dest.test'] } }));
  assert.is(otherEnvelope.responseCode, 554, 'other recipients make another message');

  const overHttp = await s.send({ from: 'a@sender.test', to: ['idem-http@dest.test'], subject: 'http', text: 'x' }, { 'Idempotency-Key': 'smtp-order-42' });
  assert.is(overHttp.status, 200, 'the HTTP endpoint has its own keys');
  assert.is.not(overHttp.body.id, first);

  await deliveredTo('idem@dest.test');
  await new Promise((r) => setTimeout(r, 300));
  assert.is(s.sink.messages.filter((m) => m.rcptTo.includes('idem@dest.test')).length, 1, 'delivered once');
  assert.is(await s.t.app.store.read(value("SELECT count(*) FROM emails WHERE subject = 'once'")), 1);
  const raw = (await deliveredTo('idem@dest.test')).raw.toString('latin1');
  assert.not.match(raw, /^Idempotency-Key:/im, 'the key does not travel on');
});

test('a key revoked during a session stops it at the next message', async () => {
  const { store, clock } = s.t.app;
  const { workspaceId } = (await store.read(findKeyBySecret(clock, s.key)))!;
  const doomed = await store.write(() => createKey(clock, workspaceId, 'doomed'));
  const c = await session(doomed.key);
  assert.is((await c.command('MAIL FROM:<a@sender.test>')).code, 250);
  assert.is((await c.command('RSET')).code, 250);
  await store.write(() => revokeKey(clock, workspaceId, doomed.id));
  const mail = await c.command('MAIL FROM:<a@sender.test>');
  assert.is(mail.code, 530);
  assert.match(mail.text, /^5\.7\.0 /);
  c.close();
});

test('failed AUTH from one address is slowed, then refused with 454 even for the right key; other addresses are unaffected', async () => {
  // From 127.0.0.9, so the other tests' address keeps a clean record.
  const from = (pass: string) => transport({ localAddress: '127.0.0.9', auth: { user: 'x', pass } });
  for (let i = 0; i < 10; i++) {
    const err = await refusal(from(`re_${String(i).padStart(32, 'w')}`).verify());
    assert.is(err.responseCode, 535, String(err.response));
  }
  const refused = await refusal(from(s.key).verify());
  assert.is(refused.responseCode, 454);
  assert.match(String(refused.response), /^454 4\.7\.0 Too many failed authentications/);
  assert.ok(await transport().verify(), 'another address still gets in');
});

test('MAILWRIGHT_SUBMISSION_PORT=0 means no submission listener at all', async () => {
  const off = await startTestApp();
  try {
    assert.is(off.running.submission, null);
    assert.is(off.submissionPort, null);
    const ready = off.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'ready');
    assert.is(ready.submission, null);
  } finally {
    await off.stop();
  }
});

test.run();
