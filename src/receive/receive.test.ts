// Receiving over real SMTP sessions to the real MX listener, with DNS from the test kit: who may receive,
// what is refused and with which reply, and what a stored message looks like (trace fields, authentication
// verdicts, classification, threads, attachments).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, sqliteOnly } from '../testkit/app.ts';
import { all, exec, value } from '../db/query.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { eventually } from '../testkit/outbound.ts';
import { unpackMessage } from '../mail/packing.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_MAX_MESSAGE_BYTES: '200000' } });
  s.senderDomain('sender.example');
});
test.after(() => s.stop());

let n = 0;
const message = (opts: { subject?: string; from?: string; headers?: string; body?: string; messageId?: string } = {}) => {
  const id = opts.messageId ?? `m${++n}.${Date.now()}@sender.example`;
  return {
    id,
    raw:
      `From: ${opts.from ?? 'Alice <alice@sender.example>'}\r\nTo: Hello <hello@in.example>\r\nSubject: ${opts.subject ?? `Hi ${n}`}\r\n` +
      `Message-ID: <${id}>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n${opts.headers ?? ''}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n` +
      `${opts.body ?? 'Hello there, this is a plain message.'}\r\n`,
  };
};
const byMessageId = (id: string) => s.stored('e.message_id = ?', id);

test('a message for an active inbox is stored with its trace fields, then answered 250', async () => {
  const m = message({ subject: 'Lunch on Friday?' });
  const reply = await s.deliver(m.raw, {});
  assert.is(reply.code, 250, reply.text);
  assert.match(reply.text, /^2\.0\.0 Ok: queued as em_/);
  const [row] = await byMessageId(m.id);
  assert.ok(row, 'stored');
  assert.is(row.subject, 'Lunch on Friday?');
  assert.is(row.inbox_id, s.inbox.id);
  assert.is(row.from_address, 'alice@sender.example');
  const raw = row.raw.toString('latin1');
  assert.match(raw, /^Received: from client\.sender\.example \(unknown \[127\.0\.0\.1\]\)\r\n\tby mx\.mailwright\.test \(Mailwright\) with ESMTP id /);
  assert.match(raw, /\r\nAuthentication-Results: mx\.mailwright\.test;/);
  assert.ok(raw.endsWith(m.raw), 'the bytes as received follow our trace fields unchanged');
  const auth = JSON.parse(row.authentication);
  assert.is(auth.spf.result, 'pass');
  assert.is(auth.dmarc.result, 'pass', 'SPF passes for the MAIL FROM domain, which is the From domain');
  assert.is(row.category, 'primary');
});

test('recipients: unknown local address 550 5.1.1, disabled inbox 550, foreign domain 554 5.7.1, never a relay', async () => {
  const disabled = await s.createInbox(s.domain.id, 'gone');
  await request(`${s.t.api}/inboxes/${disabled.id}`, { method: 'PATCH', body: { status: 'disabled' }, key: s.key });
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  assert.is((await c.command('MAIL FROM:<a@sender.example>')).code, 250);
  const unknown = await c.command('RCPT TO:<nobody@in.example>');
  assert.is(unknown.code, 550);
  assert.match(unknown.text, /^5\.1\.1 /);
  const off = await c.command('RCPT TO:<gone@in.example>');
  assert.is(off.code, 550);
  assert.match(off.text, /disabled/i);
  for (const rcpt of ['<u@other.test>', '<hello%other.test@in.example>', '<other.test!hello@in.example>', '<"hello@other.test"@in.example>', '<@in.example:hello@other.test>', '<hello@other.test@in.example>']) {
    const reply = await c.command(`RCPT TO:${rcpt}`);
    assert.ok(reply.code >= 500, `${rcpt} must be refused: ${reply.code} ${reply.text}`);
  }
  const ok = await c.command('RCPT TO:<HELLO@IN.EXAMPLE>');
  assert.is(ok.code, 250, 'addresses are matched without regard to case');
  c.close();
});

test('a domain whose inbound is not ready receives nothing, even with an inbox', async () => {
  const d = await s.verifiedDomain('notready.example');
  const inbox = await request(`${s.t.api}/inboxes`, { body: { domain_id: d.id, local_part: 'x' }, key: s.key });
  assert.is(inbox.status, 201);
  const reply = await s.deliver(message().raw, { to: ['x@notready.example'] });
  assert.is(reply.code, 554);
});

test('more than 100 recipients in one transaction: 452 for the 101st, the first 100 still get the message', async () => {
  const d = await s.inboundDomain('many.example');
  const addresses: string[] = [];
  for (let i = 0; i < 101; i++) addresses.push((await s.createInbox(d.id, `u${i}`)).address);
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  await c.command('MAIL FROM:<a@sender.example>');
  for (const a of addresses.slice(0, 100)) assert.is((await c.command(`RCPT TO:<${a}>`)).code, 250);
  const over = await c.command(`RCPT TO:<${addresses[100]}>`);
  assert.is(over.code, 452);
  assert.is((await c.command('DATA')).code, 354);
  const m = message({ subject: 'To many' });
  c.write(m.raw + '.\r\n');
  assert.is((await c.read(30_000)).code, 250);
  c.close();
  const rows = await byMessageId(m.id);
  assert.is(rows.length, 100, 'one copy per accepted inbox');
});

test('SIZE: a declared size over the limit is 552, and so is an undeclared oversized message; nothing is stored', async () => {
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  const declared = await c.command('MAIL FROM:<a@sender.example> SIZE=300000');
  assert.is(declared.code, 552);
  c.close();
  const big = message({ body: 'x'.repeat(76) + ('\r\n' + 'y'.repeat(76)).repeat(3000), subject: 'too big' });
  const reply = await s.deliver(big.raw, {});
  assert.is(reply.code, 552, reply.text);
  assert.match(reply.text, /^5\.3\.4 /);
  assert.is((await byMessageId(big.id)).length, 0);
});

for (const [name, lookAlike] of [
  ['\\n.\\n', '\n.\n'],
  ['\\n.\\r\\n', '\n.\r\n'],
  ['\\r\\n.\\n', '\r\n.\n'],
  ['\\r.\\r', '\r.\r'],
] as const) {
  test(`SMTP smuggling with ${name} is refused whole, never split into two messages`, async () => {
    const first = `smuggle-a-${n++}@sender.example`;
    const second = `smuggle-b-${n++}@sender.example`;
    const body =
      `From: alice@sender.example\r\nTo: hello@in.example\r\nSubject: outer\r\nMessage-ID: <${first}>\r\n\r\nhello${lookAlike}` +
      `MAIL FROM:<ceo@in.example>\r\nRCPT TO:<hello@in.example>\r\nDATA\r\nFrom: ceo@in.example\r\nMessage-ID: <${second}>\r\nSubject: forged\r\n\r\nwire money\r\n`;
    const reply = await s.deliver(Buffer.from(body, 'latin1'), {});
    assert.is(reply.code, 554, reply.text);
    assert.match(reply.text, /smuggling/i);
    assert.is((await byMessageId(first)).length, 0);
    assert.is((await byMessageId(second)).length, 0);
  });
}

test('more than 50 Received headers is a loop: 554 5.4.6; 50 are fine', async () => {
  const hops = (k: number) => Array.from({ length: k }, (_, i) => `Received: from hop${i}.example by hop${i + 1}.example; Sat, 21 Nov 2026 10:00:00 +0000\r\n`).join('');
  const looping = message({ headers: '' });
  const reply = await s.deliver(hops(51) + looping.raw, {});
  assert.is(reply.code, 554);
  assert.match(reply.text, /^5\.4\.6 /);
  assert.is((await byMessageId(looping.id)).length, 0);
  const deep = message();
  assert.is((await s.deliver(hops(50) + deep.raw, {})).code, 250);
});

test('a client that disconnects mid-DATA leaves nothing behind', async () => {
  const m = message({ subject: 'half' });
  const c = await RawSmtp.open(s.t.smtpPort);
  await c.read();
  await c.command('EHLO client.example');
  await c.command('MAIL FROM:<a@sender.example>');
  await c.command(`RCPT TO:<${s.inbox.address}>`);
  await c.command('DATA');
  c.write(m.raw.slice(0, 120));
  await new Promise((r) => setTimeout(r, 100));
  c.close();
  await new Promise((r) => setTimeout(r, 300));
  assert.is((await byMessageId(m.id)).length, 0);
  // The listener is fine afterwards.
  assert.is((await s.deliver(message().raw, {})).code, 250);
});

test('DKIM: a signed message verifies as pass (DMARC pass), a tampered one as fail and lands in spam', async () => {
  const signer = s.senderDomain('signed.example');
  const good = message({ from: 'Bob <bob@signed.example>', subject: 'Signed' });
  assert.is((await s.deliver(await signer.sign(good.raw), { from: 'bob@signed.example' })).code, 250);
  const [row] = await byMessageId(good.id);
  const auth = JSON.parse(row.authentication);
  assert.is(auth.dkim.result, 'pass');
  assert.equal(auth.dkim.domains, ['signed.example']);
  assert.is(auth.dmarc.result, 'pass');
  assert.is(row.category, 'primary');

  // From a domain whose SPF does not allow this client, so only DKIM could pass DMARC. (A domain of its
  // own: the box caches DNS answers for a minute, so changing a record in the middle would not be seen.)
  const strict = s.senderDomain('strict.example');
  s.dns.set('strict.example', 'TXT', ['v=spf1 ip4:192.0.2.1 -all']);
  const bad = message({ from: 'Bob <bob@strict.example>', subject: 'Signed' });
  const tampered = (await strict.sign(bad.raw)).toString('latin1').replace('Hello there', 'Send money');
  assert.is((await s.deliver(Buffer.from(tampered, 'latin1'), { from: 'bob@strict.example' })).code, 250);
  const [tamperedRow] = await byMessageId(bad.id);
  const tamperedAuth = JSON.parse(tamperedRow.authentication);
  assert.is(tamperedAuth.dkim.result, 'fail');
  assert.is(tamperedAuth.dmarc.result, 'fail');
  assert.is(tamperedRow.category, 'spam');
  assert.match(tamperedRow.classification, /DMARC failed for strict\.example \(p=reject\)/);

  const header = message({ from: 'Bob <bob@strict.example>', subject: 'Invoice 100' });
  const edited = (await strict.sign(header.raw)).toString('latin1').replace('Subject: Invoice 100', 'Subject: Invoice 900');
  assert.is((await s.deliver(Buffer.from(edited, 'latin1'), { from: 'bob@strict.example' })).code, 250);
  assert.is(JSON.parse((await byMessageId(header.id))[0].authentication).dkim.result, 'fail', 'a changed signed header fails too');
});

test('a spoof of a p=reject domain from an IP its SPF does not allow lands in spam with the reason', async () => {
  s.senderDomain('bank.example');
  s.dns.set('bank.example', 'TXT', ['v=spf1 ip4:192.0.2.10 -all']);
  const m = message({ from: 'Bank <security@bank.example>', subject: 'Verify your account' });
  assert.is((await s.deliver(m.raw, { from: 'security@bank.example' })).code, 250, 'stored, not refused: the owner can still see it');
  const [row] = await byMessageId(m.id);
  assert.is(row.category, 'spam');
  assert.match(row.classification, /DMARC failed for bank\.example \(p=reject\)/);
  assert.is(JSON.parse(row.authentication).spf.result, 'fail');
});

test('two From headers count as a DMARC failure', async () => {
  const m = message({ from: 'alice@sender.example\r\nFrom: ceo@in.example', subject: 'Two froms' });
  assert.is((await s.deliver(m.raw, {})).code, 250);
  const [row] = await byMessageId(m.id);
  const auth = JSON.parse(row.authentication);
  assert.is(auth.dmarc.result, 'fail');
  assert.is(row.category, 'spam');
  assert.match(row.raw.toString('latin1'), /dmarc=fail \(more than one From address\)/);
});

test('an Authentication-Results claiming our host name is removed; others stay', async () => {
  const m = message({ headers: 'Authentication-Results: mx.mailwright.test; dkim=pass header.d=bank.example\r\nAuthentication-Results: relay.other.test; spf=pass\r\n' });
  assert.is((await s.deliver(m.raw, {})).code, 250);
  const raw = (await byMessageId(m.id))[0].raw.toString('latin1');
  assert.not.match(raw, /dkim=pass header\.d=bank\.example/);
  assert.match(raw, /Authentication-Results: relay\.other\.test; spf=pass/);
  assert.is((raw.match(/Authentication-Results: mx\.mailwright\.test/g) ?? []).length, 1, 'only ours');
});

test('a newsletter lands in updates, with the reason', async () => {
  const m = message({
    from: 'Weekly <news@sender.example>',
    subject: 'This week in gardening',
    headers: 'List-Id: Gardening Weekly <weekly.sender.example>\r\nList-Unsubscribe: <https://sender.example/u/1>\r\n',
  });
  assert.is((await s.deliver(m.raw, {})).code, 250);
  const [row] = await byMessageId(m.id);
  assert.is(row.category, 'updates');
  assert.match(row.classification, /List-Unsubscribe|List-Id/);
});

test('threads: a reply joins the thread of the message it answers; a reply to mail we sent is important', async () => {
  const first = message({ subject: 'Project kickoff' });
  await s.deliver(first.raw, {});
  const [firstRow] = await byMessageId(first.id);
  assert.is(firstRow.thread_id, firstRow.id, 'a new thread is named after its first message');
  const reply = message({ subject: 'Re: Project kickoff', headers: `In-Reply-To: <${first.id}>\r\nReferences: <${first.id}>\r\n` });
  await s.deliver(reply.raw, {});
  const [replyRow] = await byMessageId(reply.id);
  assert.is(replyRow.thread_id, firstRow.id);
  assert.is(replyRow.important, 0);

  s.routeTo('sender.example');
  const sent = await s.send({ from: 'hello@in.example', to: ['alice@sender.example'], subject: 'Quote', text: 'Our offer.' });
  assert.is(sent.status, 200, JSON.stringify(sent.body));
  const answer = message({ subject: 'Re: Quote', headers: `In-Reply-To: ${sent.body.providerMessageId}\r\n` });
  await s.deliver(answer.raw, {});
  const [answerRow] = await byMessageId(answer.id);
  assert.is(answerRow.thread_id, sent.body.threadId);
  assert.is(answerRow.important, 1);
  assert.match(answerRow.classification, /./);
});

test('attachment file names are sanitised: ../../x.pdf is stored as x.pdf', async () => {
  const id = `att-${n++}@sender.example`;
  const raw =
    `From: alice@sender.example\r\nTo: hello@in.example\r\nSubject: Invoice\r\nMessage-ID: <${id}>\r\nMIME-Version: 1.0\r\n` +
    `Content-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n` +
    `--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="../../x.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n` +
    `${Buffer.from('%PDF-1.4 test').toString('base64')}\r\n--b1--\r\n`;
  assert.is((await s.deliver(raw, {})).code, 250);
  const [row] = await byMessageId(id);
  const atts = await s.t.app.store.read(all<{ filename: string; content_type: string; content: Buffer }>('SELECT filename, content_type, content FROM email_attachments WHERE email_id = ?', row.id));
  assert.is(atts.length, 1);
  assert.is(atts[0].filename, 'x.pdf');
  assert.is(atts[0].content_type, 'application/pdf');
  assert.is(atts[0].content.toString(), '%PDF-1.4 test');
});

test('a 1,001-part message mailparser gives up on is still stored, with its subject', async () => {
  const id = `parts-${n++}@sender.example`;
  let body = '';
  for (let i = 0; i < 1001; i++) body += `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`;
  const raw = `From: alice@sender.example\r\nTo: hello@in.example\r\nSubject: Many parts\r\nMessage-ID: <${id}>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${body}--b--\r\n`;
  const reply = await s.deliver(raw, {});
  assert.is(reply.code, 250, reply.text);
  const [row] = await byMessageId(id);
  assert.ok(row, 'stored');
  assert.is(row.subject, 'Many parts');
  assert.ok(row.raw.toString('latin1').endsWith(raw), 'raw kept whole');
});

// The full-text index is FTS5's (email_search MATCH): SQLite's.
sqliteOnly(test)('the received event is written with the message, and its full-text row a moment later without a search', async () => {
  const m = message({ subject: 'Quarterly zeppelin report' });
  await s.deliver(m.raw, {});
  const [row] = await byMessageId(m.id);
  const events = await s.events(row.id);
  assert.equal(events.map((e) => [e.type, e.recipient]), [['received', 'hello@in.example']]);
  const db = s.readDb();
  const indexed = () => db.prepare("SELECT e.id FROM email_search JOIN emails e ON e.search_rowid = email_search.rowid WHERE email_search MATCH 'zeppelin'").pluck().all();
  const waiting = () => db.prepare('SELECT email_id FROM search_backlog').pluck().all();
  const now = [...indexed(), ...waiting()];
  assert.equal(now, [row.id], 'on the backlog or in the index, once');
  await eventually(() => indexed().length === 1 && waiting().length === 0, 5_000, 'indexed by the writer in its own time');
  assert.equal(indexed(), [row.id]);
});

test('PTR of the client comes from the configured resolvers and appears in our Received field', async () => {
  s.dns.set('1.0.0.127.in-addr.arpa', 'PTR', ['client.ptr.example']);
  const m = message();
  await s.deliver(m.raw, {});
  s.dns.remove('1.0.0.127.in-addr.arpa', 'PTR');
  assert.match((await byMessageId(m.id))[0].raw.toString('latin1'), /^Received: from client\.sender\.example \(client\.ptr\.example \[127\.0\.0\.1\]\)/);
});

test('the VERP bounce address of a sent email receives (the report is kept); a forged one is refused', async () => {
  s.routeTo('sender.example');
  const sent = await s.send({ from: 'hello@in.example', to: ['bob@sender.example'], subject: 'Will bounce', text: 'x' });
  assert.is(sent.status, 200);
  const verp = (await s.t.app.store.read(value<string>('SELECT envelope_from FROM emails WHERE id = ?', sent.body.id)))!;
  assert.match(verp, /^b-em_[0-9a-z]{26}-[0-9a-f]{12}@bounces\.in\.example$/);
  const dsn = message({ from: 'MAILER-DAEMON@sender.example', subject: 'Undelivered Mail Returned to Sender' });
  assert.is((await s.deliver(dsn.raw, { from: '', to: [verp] })).code, 250);
  const reports = await s.t.app.store.read(all<{ email_id: string; raw: Buffer }>('SELECT email_id, raw FROM inbound_reports WHERE email_id = ?', sent.body.id));
  assert.is(reports.length, 1);
  assert.ok(unpackMessage(reports[0].raw, null).toString('latin1').endsWith(dsn.raw), 'kept packed alone, without bodies');
  assert.is((await byMessageId(dsn.id)).length, 0, 'a report is not mail for an inbox');
  const forged = verp.replace(/-[0-9a-f]{12}@/, '-000000000000@');
  const refused = await s.deliver(message().raw, { from: '', to: [forged] });
  assert.is(refused.code, 550);
  assert.match(refused.text, /^5\.1\.1 /);
});

const FAULT = {
  sqlite: "CREATE TRIGGER injected_fault BEFORE INSERT ON events WHEN NEW.type = 'received' BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
  postgres: `CREATE FUNCTION injected_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$;
    CREATE TRIGGER injected_fault BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.type = 'received') EXECUTE FUNCTION injected_fault()`,
};
const FAULT_GONE = { sqlite: 'DROP TRIGGER injected_fault', postgres: 'DROP TRIGGER injected_fault ON events; DROP FUNCTION injected_fault()' };

test('our own fault (the store refuses the write) answers 451 4.3.0 and stores nothing, not even in part', async () => {
  // A trigger added from outside makes the receive transaction fail at its last write, after the email row
  // and the rest were written: the whole message must roll back.
  await s.t.app.store.write(() => exec(FAULT));
  let reply;
  try {
    reply = await s.deliver(message({ subject: 'during the fault' }).raw, {});
  } finally {
    await s.t.app.store.write(() => exec(FAULT_GONE));
  }
  assert.is(reply.code, 451, reply.text);
  assert.match(reply.text, /^4\.3\.0 /);
  assert.is((await s.stored('e.subject = ?', 'during the fault')).length, 0);
  assert.is((await s.deliver(message().raw, {})).code, 250, 'the listener recovers');
});

test.run();
