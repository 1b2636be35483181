// Sending end to end: POST /emails and /emails/batch over real HTTP, the queue, DKIM signing in worker
// threads and delivery over real SMTP to the test kit's sink as the recipients' MX, found through the
// kit's DNS server. Asserts what a sender checks: the bytes that arrive, the signature, the events.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { request, runCli } from '../testkit/app.ts';
import { startSmtpSink } from '../testkit/smtp-sink.ts';
import { ApiError } from '../errors.ts';
import { planSend, sendStep } from './submit.ts';
import { ensureLabels } from '../labels/labels.ts';
import { run, value } from '../db/query.ts';
import { parseSendRequest } from './request.ts';

let s: OutboundScene;

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

const deliveredTo = (recipient: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(recipient)), 10_000, `a message for ${recipient}`);
const status = (id: string) => s.t.app.store.read(value<string>('SELECT status FROM emails WHERE id = ?', id));
const deliveries = async () => Number(await s.t.app.store.read(value<number>('SELECT count(*) FROM deliveries')));

test('a send arrives with the right envelope and headers, and its DKIM signature verifies', async () => {
  const res = await s.send({
    from: 'Ada from Sender <ada@sender.test>',
    to: ['one@dest.test'],
    cc: 'two@dest.test',
    bcc: ['hidden@dest.test'],
    reply_to: 'replies@sender.test',
    subject: 'Hello ✓',
    html: '<p>Hi <b>there</b></p>',
    headers: { 'X-Entity-Ref-ID': 'abc-123' },
    tags: [{ name: 'campaign', value: 'welcome' }],
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.match(res.body.id, /^em_[0-9A-Z]{26}$/);
  assert.match(res.body.providerMessageId, /^<[0-9a-z]{26}@sender\.test>$/);
  assert.is(res.body.threadId, res.body.id);

  const m = await deliveredTo('one@dest.test');
  assert.match(m.mailFrom, /^b-em_[0-9a-z]{26}-[0-9a-f]{12}@bounces\.sender\.test$/, 'VERP on the bounce subdomain');
  assert.equal([...m.rcptTo].sort(), ['hidden@dest.test', 'one@dest.test', 'two@dest.test'], 'one transaction for the three recipients at dest.test');
  const parsed = await simpleParser(m.raw);
  assert.is(parsed.messageId, res.body.providerMessageId);
  assert.is(parsed.subject, 'Hello ✓');
  assert.is(parsed.from?.text, '"Ada from Sender" <ada@sender.test>');
  assert.is(parsed.headers.get('x-entity-ref-id'), 'abc-123');
  assert.not.ok(m.raw.toString().toLowerCase().includes('hidden@dest.test'), 'Bcc is not in the headers');
  assert.match(parsed.text ?? '', /Hi there/, 'a text part derived from the HTML');
  const dkim = await s.dkim(m.raw);
  assert.equal([dkim.status, dkim.signingDomain], ['pass', 'sender.test']);
  for (const h of ['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type']) assert.ok(dkim.signedHeaders.includes(h), `h= covers ${h}`);
  assert.match(m.raw.toString('latin1'), /c=relaxed\/relaxed/);
  assert.not.match(m.raw.toString('latin1').split('\r\n\r\n')[0], /;\s*l=/, 'no l= tag');

  const events = await eventually(async () => {
    const e = await s.events(res.body.id);
    return e.filter((x) => x.type === 'delivered').length === 3 && e;
  });
  assert.equal(events.filter((e) => e.type === 'sent').map((e) => e.recipient).sort(), ['hidden@dest.test', 'one@dest.test', 'two@dest.test']);
  const delivered = events.find((e) => e.type === 'delivered')!;
  assert.is(delivered.data.code, 250);
  assert.is(delivered.data.mx, 'mx.dest.test');
  assert.is(delivered.data.tls, false);
  assert.is(await status(res.body.id), 'delivered');
});

test('validation names the field; an unverified sender is 403; marketing needs it enabled', async () => {
  const base = { from: 'a@sender.test', to: ['x@dest.test'], subject: 's', text: 't' };
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ ...base, to: 'not an address' }, 400, 'validation_error', 'to'],
    [{ ...base, from: 'a@other.test' }, 403, 'domain_not_verified', ''],
    [{ ...base, message_class: 'marketing' }, 403, 'marketing_not_enabled', ''],
    [{ ...base, text: undefined }, 400, 'validation_error', 'html'],
    [{ ...base, to: Array.from({ length: 51 }, (_, i) => `r${i}@dest.test`) }, 400, 'validation_error', 'to'],
    [{ ...base, text: undefined, template: { id: 'tmpl_01ARZ3NDEKTSV4RRFFQ69G5FAV' } }, 400, 'validation_error', 'template'],
    [{ ...base, template: { key: 'welcome' } }, 400, 'validation_error', 'text'],
    [{ ...base, attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `f${i}.txt`, content: 'aGk=' })) }, 400, 'limit_exceeded', 'attachments'],
    [{ ...base, attachments: [{ filename: 'big.bin', content: Buffer.alloc(10_000_001).toString('base64') }] }, 413, 'payload_too_large', 'attachments'],
    [{ ...base, labels: Array.from({ length: 11 }, (_, i) => `l${i}`) }, 400, 'limit_exceeded', 'labels'],
    [{ ...base, surprise: true }, 400, 'validation_error', ''],
    [{ ...base, in_reply_to: 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV' }, 400, 'validation_error', 'in_reply_to'],
  ];
  const before = await deliveries();
  for (const [body, code, kind, field] of cases) {
    const res = await s.send(body);
    assert.is(res.status, code, JSON.stringify(res.body));
    assert.is(res.body.error.code, kind);
    if (field) assert.ok(res.body.error.message.startsWith(`${field}:`), res.body.error.message);
  }
  assert.is(await deliveries(), before, 'nothing was queued');
});

test('CR, LF or NUL in anything that becomes a header is a 400 and nothing is queued', async () => {
  const base = { from: 'a@sender.test', to: ['x@dest.test'], subject: 's', text: 't' };
  const attempts: Array<Record<string, unknown>> = [
    { ...base, subject: 'hi\r\nBcc: victim@evil.test' },
    { ...base, subject: 'nul\u0000byte' },
    { ...base, from: '"a\r\nX-Injected: y" <a@sender.test>' },
    { ...base, reply_to: 'r@sender.test\r\nBcc: v@evil.test' },
    { ...base, headers: { 'X-Custom': 'v\r\nBcc: v@evil.test' } },
    { ...base, headers: { 'X-Custom': 'v\nSubject: pwned' } },
    { ...base, headers: { 'Bad:Name': 'v' } },
    { ...base, headers: { Bcc: 'v@evil.test' } },
    { ...base, to: ['a@dest.test>\r\nRCPT TO:<c@evil.test'] },
    { ...base, attachments: [{ filename: 'a.txt\r\nContent-Type: text/html', content: 'aGk=' }] },
    { ...base, attachments: [{ filename: '../../etc/passwd', content: 'aGk=' }] },
    { ...base, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text/plain\r\nX: y' }] },
    { ...base, in_reply_to: '<a@b>\r\nBcc: v@evil.test' },
  ];
  const before = await deliveries();
  for (const body of attempts) {
    const res = await s.send(body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_error');
  }
  assert.is(await deliveries(), before);
});

test('dot lines, bare LF, bare CR and a 50 KB line arrive intact and signed', async () => {
  const text = ['first', '.', 'a\n.\r\nMAIL FROM:<evil@x>', 'b\r.\rc', '..double', 'x'.repeat(50_000), 'last'].join('\n');
  const res = await s.send({ from: 'a@sender.test', to: ['dots@dest.test'], subject: 'dots', text });
  const m = await deliveredTo('dots@dest.test');
  assert.is(s.sink.messages.filter((x) => x.rcptTo.includes('dots@dest.test')).length, 1, 'one message, not split');
  assert.not.match(m.raw.toString('latin1'), /(?<!\r)\n|\r(?!\n)/, 'no bare CR or LF on the wire');
  assert.ok(m.raw.toString('latin1').split('\r\n').every((l) => l.length <= 998), 'no line over 998 octets');
  assert.is((await s.dkim(m.raw)).status, 'pass');
  const parsed = await simpleParser(m.raw);
  const norm = (v: string) => v.replace(/\r\n|\r|\n/g, '\n').trimEnd();
  assert.is(norm(parsed.text ?? ''), norm(text));
  assert.ok(res.body.id);
});

test('attachments arrive with their name, type and bytes', async () => {
  const pdf = Buffer.from('%PDF-1.4 fake pdf bytes \u0000\u0001\u0002');
  await s.send({ from: 'a@sender.test', to: ['files@dest.test'], subject: 'files', text: 'see attached', attachments: [{ filename: 'report ü.pdf', content: pdf.toString('base64'), content_type: 'application/pdf' }] });
  const parsed = await simpleParser((await deliveredTo('files@dest.test')).raw);
  assert.is(parsed.attachments.length, 1);
  assert.equal([parsed.attachments[0].filename, parsed.attachments[0].contentType], ['report ü.pdf', 'application/pdf']);
  assert.ok(parsed.attachments[0].content.equals(pdf));
});

test('a reply threads: in_reply_to by em_ id sets In-Reply-To, References and the thread id', async () => {
  const first = (await s.send({ from: 'a@sender.test', to: ['thread@dest.test'], subject: 'start', text: '1' })).body;
  const reply = (await s.send({ from: 'a@sender.test', to: ['thread@dest.test'], subject: 'Re: start', text: '2', in_reply_to: first.id })).body;
  assert.is(reply.threadId, first.id);
  const byMessageId = (await s.send({ from: 'a@sender.test', to: ['thread@dest.test'], subject: 'Re: start', text: '3', in_reply_to: first.providerMessageId })).body;
  assert.is(byMessageId.threadId, first.id);
  const replies = await eventually(() => s.sink.messages.filter((m) => m.rcptTo.includes('thread@dest.test')).length === 3 && s.sink.messages);
  const parsed = await simpleParser(replies.filter((m) => m.rcptTo.includes('thread@dest.test')).find((m) => m.raw.includes(reply.providerMessageId.slice(1, -1)) && m.raw.toString().includes('Message-ID: ' + reply.providerMessageId))!.raw);
  assert.is(parsed.inReplyTo, first.providerMessageId);
  assert.equal([parsed.references].flat(), [first.providerMessageId]);
});

test('550 bounces at once with the code and response in the event', async () => {
  s.sink.replyTo('nobody@dest.test', { code: 550, message: '5.1.1 <nobody@dest.test>: no such user' });
  const res = await s.send({ from: 'a@sender.test', to: ['nobody@dest.test'], subject: 'x', text: 'y' });
  const bounced = await eventually(async () => (await s.events(res.body.id)).find((e) => e.type === 'bounced'));
  assert.is(bounced.recipient, 'nobody@dest.test');
  assert.is(bounced.data.code, 550);
  assert.match(String(bounced.data.response), /no such user/);
  assert.is(await status(res.body.id), 'bounced');
});

test('451 then 250: deferred with one delivery_delayed, delivered after `queue flush`', async () => {
  s.sink.replyTo('later@dest.test', { code: 451, message: '4.2.0 try again later' });
  const res = await s.send({ from: 'a@sender.test', to: ['later@dest.test'], subject: 'later', text: 'y' });
  await eventually(async () => (await s.events(res.body.id)).some((e) => e.type === 'delivery_delayed'));
  assert.is(await status(res.body.id), 'delivery_delayed');
  const queued = await runCli(['queue', 'list', '--json'], s.t.env);
  const rows = JSON.parse(queued.stdout) as Array<{ emailId: string; state: string; lastResponse: string }>;
  const row = rows.find((r) => r.emailId === res.body.id)!;
  assert.equal([row.state, row.lastResponse.includes('try again later')], ['deferred', true]);
  s.sink.replyTo('later@dest.test', { code: 250 });
  const flushed = await runCli(['queue', 'flush'], s.t.env);
  assert.match(flushed.stdout, /^\d+ deliveries will be attempted now/);
  await deliveredTo('later@dest.test');
  const events = await eventually(async () => {
    const e = await s.events(res.body.id);
    return e.some((x) => x.type === 'delivered') && e;
  });
  assert.equal(events.map((e) => e.type), ['sent', 'delivery_delayed', 'delivered']);
  assert.is(await status(res.body.id), 'delivered');
});

test('NXDOMAIN and null MX bounce without connecting; no MX but an A record delivers; SERVFAIL defers', async () => {
  const nx = (await s.send({ from: 'a@sender.test', to: ['x@no-such-domain.test'], subject: 'x', text: 'y' })).body;
  s.dns.set('null-mx.test', 'MX', [{ preference: 0, exchange: '.' }]);
  const nullMx = (await s.send({ from: 'a@sender.test', to: ['x@null-mx.test'], subject: 'x', text: 'y' })).body;
  s.dns.set('a-only.test', 'A', ['127.0.0.2']);
  await s.send({ from: 'a@sender.test', to: ['x@a-only.test'], subject: 'x', text: 'y' });
  s.dns.set('servfail.test', 'MX', [{ preference: 10, exchange: 'mx.servfail.test' }]);
  s.dns.fail('servfail.test', '*', 'SERVFAIL');
  const sf = (await s.send({ from: 'a@sender.test', to: ['x@servfail.test'], subject: 'x', text: 'y' })).body;
  const bounce = (id: string) => eventually(async () => (await s.events(id)).find((e) => e.type === 'bounced'));
  assert.is((await bounce(nx.id)).data.code, null);
  assert.match(String((await bounce(nullMx.id)).data.response), /null MX|5\.1\.10|accepts no mail/i);
  await deliveredTo('x@a-only.test');
  const delayed = await eventually(async () => (await s.events(sf.id)).find((e) => e.type === 'delivery_delayed'));
  assert.ok(delayed);
  s.dns.unfail();
});

test('idempotency: replay, conflict, and parallel requests with one key deliver exactly once', async () => {
  const body = { from: 'a@sender.test', to: ['idem@dest.test'], subject: 'once', text: 'only once' };
  const first = await s.send(body, { 'Idempotency-Key': 'order-42' });
  const again = await s.send({ ...body }, { 'Idempotency-Key': 'order-42' });
  assert.equal(again.body, first.body);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const conflict = await s.send({ ...body, subject: 'changed' }, { 'Idempotency-Key': 'order-42' });
  assert.equal([conflict.status, conflict.body.error.code], [409, 'invalid_idempotent_request']);

  const parallel = await Promise.all(Array.from({ length: 10 }, () => s.send({ ...body, to: ['race@dest.test'] }, { 'Idempotency-Key': 'race-1' })));
  const ok = parallel.filter((r) => r.status === 200);
  assert.ok(ok.length >= 1);
  assert.ok(new Set(ok.map((r) => r.body.id)).size === 1, 'every success names the same email');
  assert.ok(parallel.every((r) => r.status === 200 || r.body.error.code === 'concurrent_idempotent_requests'));
  await deliveredTo('race@dest.test');
  await new Promise((r) => setTimeout(r, 500));
  assert.is(s.sink.messages.filter((m) => m.rcptTo.includes('race@dest.test')).length, 1, 'delivered exactly once');
  assert.is(s.sink.messages.filter((m) => m.rcptTo.includes('idem@dest.test')).length, 1);
});

test('batch: items judged one by one, the bare-array form, one idempotency key for all, 101 items refused', async () => {
  const ok = (to: string) => ({ from: 'a@sender.test', to: [to], subject: 'b', text: 'b' });
  const res = await request(`${s.t.api}/emails/batch`, { key: s.key, body: { emails: [ok('b1@dest.test'), { ...ok('b2@dest.test'), from: 'x@unverified.test' }, { ...ok('b3@dest.test'), to: 'bad' }, ok('b4@dest.test')] } });
  assert.is(res.status, 200);
  assert.equal([res.body.count, res.body.successful, res.body.failed], [4, 2, 2]);
  assert.equal(res.body.data.map((d: any) => [d.index, d.ok]), [[0, true], [1, false], [2, false], [3, true]]);
  assert.is(res.body.data[1].error.code, 'domain_not_verified');
  assert.is(res.body.data[2].error.code, 'validation_error');
  assert.match(res.body.data[0].id, /^em_/);
  await deliveredTo('b1@dest.test');
  await deliveredTo('b4@dest.test');

  const bare = await request(`${s.t.api}/emails/batch`, { key: s.key, body: [ok('bare@dest.test')], headers: { 'Idempotency-Key': 'batch-1' } });
  assert.equal([bare.status, bare.body.successful], [200, 1]);
  const replay = await request(`${s.t.api}/emails/batch`, { key: s.key, body: [ok('bare@dest.test')], headers: { 'Idempotency-Key': 'batch-1' } });
  assert.equal(replay.body, bare.body);
  const strict = await request(`${s.t.api}/emails/batch`, { key: s.key, body: [ok('s@dest.test'), { ...ok('s2@dest.test'), to: 'bad' }], headers: { 'x-batch-validation': 'strict' } });
  assert.equal([strict.status, strict.body.error.code], [400, 'validation_error']);
  assert.match(strict.body.error.message, /^emails\.1\.to: /);
  const tooMany = await request(`${s.t.api}/emails/batch`, { key: s.key, body: Array.from({ length: 101 }, (_, i) => ok(`m${i}@dest.test`)) });
  assert.equal([tooMany.status, tooMany.body.error.code], [400, 'validation_error']);
});

test('a destination offering STARTTLS with a self-signed certificate gets the mail over TLS', async () => {
  const tlsSink = await startSmtpSink({ host: '127.0.0.3', port: s.sink.port, starttls: true });
  try {
    s.routeTo('tls.test', '127.0.0.3');
    const res = await s.send({ from: 'a@sender.test', to: ['secure@tls.test'], subject: 'over tls', text: 'encrypted' });
    const m = await eventually(() => tlsSink.messages.find((x) => x.rcptTo.includes('secure@tls.test')));
    assert.is(m.secure, true, 'the sink saw a TLS session');
    const delivered = await eventually(async () => (await s.events(res.body.id)).find((e) => e.type === 'delivered'));
    assert.equal([delivered.data.tls, delivered.data.tlsVerified, delivered.data.mx], [true, false, 'mx.tls.test']);
    assert.is((await s.dkim(m.raw)).status, 'pass');
  } finally {
    await tlsSink.close();
  }
});

test('sending identities list the addresses mail went out from and their local parts', async () => {
  const ids = (await request(`${s.t.api}/sending-identities`, { key: s.key })).body;
  assert.ok(ids.domains.includes('sender.test'));
  assert.ok(ids.addresses.includes('ada@sender.test') && ids.addresses.includes('a@sender.test'), JSON.stringify(ids));
  assert.ok(ids.localParts.includes('ada'));
});

test('events of another workspace email are 404', async () => {
  const other = (await request(`${s.t.api}/emails/em_01ARZ3NDEKTSV4RRFFQ69G5FAV/events`, { key: s.key })).status;
  assert.is(other, 404);
});

test('a check the writer thread makes in its transaction refuses the send with the API error, and nothing is written', async () => {
  const app = s.t.app;
  const workspaceId = (await app.store.read(value<string>("SELECT workspace_id FROM domains WHERE name = 'sender.test'")))!;
  const [label] = await app.store.write(() => ensureLabels(app.clock, workspaceId, ['short-lived']));
  // Checked on the event loop, then the label goes before the writer runs: the writer must refuse, not store a dangling id.
  const plan = await app.store.read(planSend(app, workspaceId, parseSendRequest({ from: 'a@sender.test', to: ['gone@dest.test'], subject: 'late label', text: 'x', labels: [label.id] })));
  await app.store.write(() => run('DELETE FROM labels WHERE id = ?', label.id));
  const refused = await app.writer.commit([sendStep([plan]).step], { now: plan.now, log: app.log }).then(() => null, (err: unknown) => err);
  assert.instance(refused, ApiError);
  assert.equal([(refused as ApiError).status, (refused as ApiError).code, (refused as ApiError).errors?.[0]?.path], [400, 'validation_error', 'labels']);
  assert.is(Number(await app.store.read(value<number>('SELECT count(*) FROM emails WHERE id = ?', plan.answer.id))), 0);
  assert.is(Number(await app.store.read(value<number>('SELECT count(*) FROM deliveries WHERE email_id = ?', plan.answer.id))), 0);
});

test.run();
