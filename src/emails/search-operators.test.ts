// The search operators of GET /emails' `query`, over HTTP against the real app: mail received over real SMTP
// sessions and sent through the API, at creation times a moving test clock sets (60, 30 and 10 days ago, and
// now). Each operator alone, negated and with others and with the list's parameters; spam and the Trash only
// with in:anywhere (or in:spam, in:trash); unknown operators as words; malformed input a 400 naming `query` or
// a 200, never a 5xx; and no plan that sorts its matches (EXPLAIN QUERY PLAN).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, sqliteOnly } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { planList } from './list.ts';
import { runOn } from '../db/sqlite-query.ts';
import { parseListParams } from './search-routes.ts';

const DAY = 86_400_000;
let offset = -60 * DAY;
const clock = { now: () => Date.now() + offset };
let s: InboundScene;

/** The seeded emails by name. */
const E: Record<string, string> = {};

async function names(query: string, params: Record<string, string> = {}): Promise<string[]> {
  const qs = new URLSearchParams({ ...params, query, limit: '100' }).toString();
  const res = await request(`${s.t.api}/emails?${qs}`, { key: s.key });
  assert.is(res.status, 200, `GET /emails?${qs}: ${JSON.stringify(res.body)}`);
  const byId = new Map(Object.entries(E).map(([name, id]) => [id, name]));
  return (res.body.data as Array<{ id: string }>).map((e) => byId.get(e.id) ?? e.id);
}
async function invalid(query: string, message: RegExp) {
  const res = await request(`${s.t.api}/emails?${new URLSearchParams({ query })}`, { key: s.key });
  assert.is(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
  assert.is(res.body.error.code, 'validation_error');
  assert.is(res.body.error.errors[0].path, 'query');
  assert.match(res.body.error.message, message);
}
const api = (path: string, body: unknown, method = 'POST') => request(`${s.t.api}${path}`, { key: s.key, method, body });
/** A day as YYYY-MM-DD (or with another separator), UTC, `days` from the real now. */
const day = (days: number, sep = '-') => new Date(Date.now() + days * DAY).toISOString().slice(0, 10).replace(/-/g, sep);

let n = 0;
async function receive(name: string, opts: { from: string; subject: string; text: string; cc?: string; attachment?: string }) {
  const b = `b${++n}`;
  const body = opts.attachment
    ? `Content-Type: multipart/mixed; boundary="${b}"\r\n\r\n--${b}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${opts.text}\r\n` +
      `--${b}\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="${opts.attachment}"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--${b}--\r\n`
    : `Content-Type: text/plain; charset=utf-8\r\n\r\n${opts.text}\r\n`;
  const raw =
    `From: ${opts.from}\r\nTo: Hello <${s.inbox.address}>\r\n${opts.cc ? `Cc: ${opts.cc}\r\n` : ''}Subject: ${opts.subject}\r\n` +
    `Message-ID: <op${n}.${Date.now()}@sender.example>\r\nMIME-Version: 1.0\r\n${body}`;
  const reply = await s.deliver(raw, { from: /<(.*)>/.exec(opts.from)![1], to: [s.inbox.address] });
  assert.is(reply.code, 250, reply.text);
  E[name] = /queued as (em_\w+)/.exec(reply.text)![1];
}
async function send(name: string, body: Record<string, unknown>) {
  const res = await s.send({ from: 'Hello Desk <hello@in.example>', text: 'Sent from the desk.', ...body });
  assert.is(res.status, 200, JSON.stringify(res.body));
  E[name] = res.body.id;
}
const patch = async (name: string, body: Record<string, unknown>) => assert.is((await api(`/emails/${E[name]}`, { learn: false, ...body }, 'PATCH')).status, 200);

test.before(async () => {
  s = await startInboundScene({ clock });
  s.senderDomain('sender.example');
  s.routeTo('dest.example');
  s.routeTo('sender.example');
  await receive('report', { from: 'Alice Liddell <alice@sender.example>', subject: 'Quarterly report', text: 'The numbers are attached.', attachment: 'q3-report.pdf' });
  // 27 days: newer than any calendar month (older_than:1m), whatever the month the test runs in.
  offset = -27 * DAY;
  await receive('lunch', { from: 'Bob Builder <bob@sender.example>', cc: 'Carol <carol@sender.example>', subject: 'Lunch on Friday', text: 'Shall we meet at the station? The report can wait. Ticket ref:A17.' });
  offset = -10 * DAY;
  await receive('invoice', { from: 'Carol <carol@sender.example>', cc: 'Dan Auditor <dan@sender.example>', subject: 'Invoice 42', text: 'Please pay invoice 42.', attachment: 'invoice-42.xlsx' });
  offset = 0;
  await receive('prize', { from: 'Prize Desk <prizes@sender.example>', subject: 'You won a report prize', text: 'Claim it now.' });
  await receive('old', { from: 'Alice Liddell <alice@sender.example>', subject: 'Old report copy', text: 'An old copy.' });
  await receive('digest', { from: 'Sender News <news@sender.example>', subject: 'Weekly digest', text: 'The report of the week.' });
  await send('quote', { to: ['Erin Customer <erin@dest.example>'], cc: ['frank@dest.example'], subject: 'Quote for the report', attachments: [{ filename: 'quote.pdf', content: 'JVBERi0xLjQK' }] });
  await send('reply', { to: ['bob@sender.example'], subject: 'Re: Lunch on Friday', text: 'Friday works.' });

  await patch('prize', { category: 'spam' });
  await patch('old', { trashed: true });
  await patch('digest', { category: 'updates', read: true });
  await patch('lunch', { archived: true, read: true });
  await patch('invoice', { important: true });
  for (const [name, label] of [['report', 'Projects/Alpha'], ['invoice', 'Big clients'], ['quote', 'Big clients']]) {
    assert.is((await api(`/emails/${E[name]}/labels`, { add: [label] })).status, 200);
  }
});
test.after(() => s.stop());

test('bare words are ANDed, spam and the Trash left out; phrases stay phrases; -word leaves out', async () => {
  assert.equal(await names('report'), ['quote', 'digest', 'lunch', 'report']);
  assert.equal(await names('report station'), ['lunch']);
  assert.equal(await names('"meet at the station"'), ['lunch']);
  assert.equal(await names('"the station meet"'), []);
  assert.equal(await names('report -quarterly'), ['quote', 'digest', 'lunch']);
  assert.equal(await names('report -"the week" -station'), ['quote', 'report']);
  assert.equal(await names('-report'), ['reply', 'invoice'], 'only a word left out: everything else');
  assert.equal(await names('-"report"'), ['reply', 'invoice']);
});

test('from: and to: are a case-insensitive part of an address or display name, as the parameters', async () => {
  assert.equal(await names('from:alice'), ['report'], 'the trashed one left out');
  assert.equal(await names('from:LIDDELL'), ['report']);
  assert.equal(await names('from:"Bob Builder"'), ['lunch']);
  assert.equal(await names('from:sender.example'), ['digest', 'invoice', 'lunch', 'report']);
  assert.equal(await names('from:desk'), ['reply', 'quote'], 'sent mail by the display name');
  assert.equal(await names('from:carol from:sender.example'), ['invoice'], 'both must match');
  assert.equal(await names('from:nobody'), []);
  assert.equal(await names('to:erin'), ['quote']);
  assert.equal(await names('to:frank'), ['quote'], 'a Cc recipient');
  assert.equal(await names('to:"Dan Auditor"'), ['invoice'], 'the Cc of received mail');
  assert.equal(await names('to:carol'), ['lunch']);
  assert.equal(await names('to:bob from:desk'), ['reply']);
  assert.equal(await names('report -from:alice'), ['quote', 'digest', 'lunch']);
  assert.equal(await names('-to:dest.example from:desk'), ['reply']);
  assert.equal(await names('from:alice', { from: 'bob' }), [], 'the parameter and the operator: both');
});

test('subject: words of the subject only; filename: attachment names; has:attachment', async () => {
  assert.equal(await names('subject:report'), ['quote', 'report'], 'not lunch or digest, whose bodies say report');
  assert.equal(await names('subject:"quarterly report"'), ['report']);
  assert.equal(await names('subject:"report quarterly"'), []);
  assert.equal(await names('report -subject:report'), ['digest', 'lunch']);
  assert.equal(await names('filename:pdf'), ['quote', 'report'], 'filename:pdf matches *.pdf');
  assert.equal(await names('filename:xlsx'), ['invoice']);
  assert.equal(await names('filename:invoice-42.xlsx'), ['invoice']);
  assert.equal(await names('filename:report'), ['report'], 'q3-report.pdf');
  assert.equal(await names('filename:numbers'), [], 'a body word is no file name');
  assert.equal(await names('has:attachment'), ['quote', 'invoice', 'report']);
  assert.equal(await names('report -has:attachment'), ['digest', 'lunch']);
  assert.equal(await names('has:attachment from:carol'), ['invoice']);
});

test('label: by name without regard to case, nested, quoted with spaces, or in Gmail’s dashed form', async () => {
  assert.equal(await names('label:"Big clients"'), ['quote', 'invoice']);
  assert.equal(await names('label:"big CLIENTS"'), ['quote', 'invoice']);
  assert.equal(await names('label:big-clients'), ['quote', 'invoice']);
  assert.equal(await names('label:Projects/Alpha'), ['report']);
  assert.equal(await names('label:projects-alpha'), ['report']);
  assert.equal(await names('label:Projects'), [], 'a parent is not its child');
  assert.equal(await names('label:"Big clients" label:Projects/Alpha'), [], 'each label must be on the email');
  assert.equal(await names('label:"Big clients" from:desk'), ['quote']);
  assert.equal(await names('has:attachment -label:"Big clients"'), ['report']);
  assert.equal(await names('label:nosuchlabel'), []);
  assert.equal(await names('report -label:nosuchlabel'), ['quote', 'digest', 'lunch', 'report']);
  assert.equal(await names('label:"Big clients"', { label: 'Projects/Alpha' }), [], 'the parameter and the operator: both');
});

test('in:anywhere reaches spam and the Trash; in:inbox, sent, archive, spam, trash; category:', async () => {
  assert.equal(await names('report in:anywhere'), ['quote', 'digest', 'old', 'prize', 'lunch', 'report']);
  assert.equal(await names('from:alice in:anywhere'), ['old', 'report']);
  assert.equal(await names('in:spam'), ['prize']);
  assert.equal(await names('in:trash'), ['old']);
  assert.equal(await names('in:trash report'), ['old']);
  assert.equal(await names('in:anywhere -in:trash report'), ['quote', 'digest', 'prize', 'lunch', 'report']);
  assert.equal(await names('in:anywhere -in:spam -in:trash report'), ['quote', 'digest', 'lunch', 'report']);
  assert.equal(await names('in:inbox'), ['digest', 'invoice', 'report'], 'received, not archived: the Inbox view of the API');
  assert.equal(await names('in:sent'), ['reply', 'quote']);
  assert.equal(await names('in:archive'), ['lunch']);
  assert.equal(await names('report -in:sent'), ['digest', 'lunch', 'report']);
  assert.equal(await names('category:updates'), ['digest']);
  assert.equal(await names('category:primary'), ['invoice', 'lunch', 'report']);
  assert.equal(await names('in:anywhere', { trashed: 'true' }), ['old'], 'trashed=true is the Trash, whatever the query');
  assert.equal(await names('in:trash', { trashed: 'false' }), [], 'an explicit trashed=false and in:trash: nothing');
  assert.equal(await names('in:sent', { direction: 'in' }), []);
});

test('is:unread, is:read, is:important', async () => {
  assert.equal(await names('is:unread'), ['invoice', 'report']);
  assert.equal(await names('is:unread in:anywhere'), ['old', 'prize', 'invoice', 'report']);
  assert.equal(await names('is:read'), ['reply', 'quote', 'digest', 'lunch'], 'sent mail counts as read, as unread=false');
  assert.equal(await names('-is:unread from:sender.example'), ['digest', 'lunch']);
  assert.equal(await names('is:important'), ['invoice']);
  assert.equal(await names('-is:important has:attachment'), ['quote', 'report']);
});

test('before: and after: dates (- or /), newer_than: and older_than:, on the creation time', async () => {
  assert.equal(await names('after:' + day(-45)), ['reply', 'quote', 'digest', 'invoice', 'lunch']);
  assert.equal(await names('after:' + day(-45, '/')), ['reply', 'quote', 'digest', 'invoice', 'lunch']);
  assert.equal(await names('before:' + day(-20, '/')), ['lunch', 'report']);
  assert.equal(await names(`after:${day(-45)} before:${day(-20)}`), ['lunch']);
  assert.equal(await names(`report -before:${day(-20)}`), ['quote', 'digest'], '-before: is after:');
  assert.equal(await names('newer_than:20d'), ['reply', 'quote', 'digest', 'invoice']);
  assert.equal(await names('older_than:20d'), ['lunch', 'report']);
  assert.equal(await names('older_than:1m in:anywhere'), ['report']);
  assert.equal(await names('newer_than:1y'), ['reply', 'quote', 'digest', 'invoice', 'lunch', 'report']);
  assert.equal(await names('after:' + day(-45), { before: new Date(Date.now() - 20 * DAY).toISOString() }), ['lunch'], 'with the parameter: both');
  const [y, m, d] = day(-27).split('-');
  assert.equal(await names(`after:${y}/${+m}/${+d} before:${day(-26)}`), ['lunch'], 'a month and day of one digit');
});

test('malformed dates are a 400 naming query; unknown operators and values are words, never an error', async () => {
  await invalid('before:2026-02-30', /^query: before: must be a date such as 2026-11-01 or 2026\/11\/01; got "2026-02-30"$/);
  await invalid('after:yesterday', /^query: after: must be a date/);
  await invalid('report after:2026-13-01', /^query: after: must be a date/);
  await invalid('newer_than:7w', /^query: newer_than: must be a number of days, months or years, such as 7d, 2m or 1y/);
  await invalid('older_than:d', /^query: older_than: /);
  assert.equal(await names('ref:A17'), ['lunch'], 'an unknown operator: the words ref and a17 side by side');
  assert.equal(await names('is:starred'), [], 'a value the box has no such thing for: words');
  assert.equal(await names('in:nowhere'), []);
  assert.equal(await names('has:drive'), []);
  assert.equal(await names('FROM:alice'), ['report'], 'operator names in any case');
  assert.equal(await names('from: alice'), [], 'no value right after the colon: the words from and alice, which no mail of alice has');
  assert.equal(await names('from: desk'), ['quote'], 'its text: "Sent from the desk."');
});

test('hostile operator input: a 200 or a 400 naming query, never a 5xx or SQLite text', async () => {
  const hostile = [
    'from:', 'from:"', 'from:""', 'to:"', 'label:""', 'label:"', 'in:', 'is:', 'has:', '-', '--', '-in:anywhere', '-from:', 'before:', 'after:"',
    'subject:*', 'subject:"*"', 'filename:"*"', 'subject:NEAR(', 'filename:"a" OR "b"', 'subject:"x""y"', 'label:%', 'label:_', 'from:%_\\', 'to:\'',
    `to:${'x'.repeat(900)}`, 'subject:(', 'subject:)', 'subject:^x', '-subject:x*', '-"', '-*', 'from:alice*', 'newer_than:99999999d', 'older_than:9999y',
    'after:0000-01-01', 'before:9999/12/31', 'label:\u0000', 'from:a\u0000b', 'in:anywhere in:trash in:spam in:sent', '-is:read -is:unread',
    Array.from({ length: 32 }, (_, i) => (i % 2 ? `-w${i}` : `from:x${i}`)).join(' '), Array.from({ length: 33 }, () => 'is:unread').join(' '),
  ];
  for (const q of hostile) {
    const res = await request(`${s.t.api}/emails?${new URLSearchParams({ query: q })}`, { key: s.key });
    assert.ok(res.status === 200 || res.status === 400, `${JSON.stringify(q.slice(0, 40))}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    if (res.status === 400) assert.is(res.body.error.errors[0].path, 'query', q);
    assert.not.match(JSON.stringify(res.body), /sqlite|fts5|syntax/i, q);
  }
  assert.equal(await names('from:%'), [], '% is a character, not a wildcard');
  assert.equal(await names('-is:read -is:unread'), []);
});

// SQLite's plans (EXPLAIN QUERY PLAN): PostgreSQL's planner chooses by its statistics.
sqliteOnly(test)('no plan of an operator sorts its matches; in:inbox walks the Inbox view', async () => {
  const db = s.t.app.db;
  const workspaceId = (db.prepare('SELECT workspace_id FROM emails WHERE id = ?').get(E.report) as { workspace_id: string }).workspace_id;
  const queries = [
    'from:alice', 'to:erin', 'subject:report', 'filename:pdf', 'has:attachment', 'label:"Big clients"', 'in:anywhere', 'in:inbox', 'in:sent', 'in:spam', 'in:trash',
    'in:archive', 'is:unread', 'is:read', 'is:important', 'category:updates', `after:${day(-45)}`, `before:${day(-20)}`, 'newer_than:7d', '-report', 'report -quarterly',
    'rep* -quarterly', 'repor* -from:alice', 'from:alice has:attachment in:anywhere report', '-label:"Big clients" -has:attachment -in:sent',
  ];
  for (const query of queries) {
    for (const params of [{}, { archived: 'false' }, { label: 'Projects/Alpha' }] as Array<Record<string, string>>) {
      const p = parseListParams({ ...params, query });
      const plan = runOn(db, planList(workspaceId, p));
      if (!plan) continue;
      const detail = (db.prepare(`EXPLAIN QUERY PLAN ${plan.sql}`).all(...plan.args) as Array<{ detail: string }>).map((r) => r.detail);
      const where = `${query} ${JSON.stringify(params)}`;
      assert.ok(!detail.some((d) => /TEMP B-TREE/.test(d)), `${where} sorts: ${detail.join(' / ')}`);
      if (plan.kind === 'search') assert.match(detail[0], /^SCAN email_(search|prefixes) VIRTUAL TABLE INDEX/, `${where}: ${detail.join(' / ')}`);
      else assert.match(detail[0], /^SEARCH e USING INDEX emails_(newest|inbox_view|labelled|trash) \(workspace_id=\?/, `${where}: ${detail.join(' / ')}`);
      if (query === 'in:inbox' && !params.label) assert.match(detail[0], /INDEX emails_inbox_view /, where);
      if (query === 'in:trash' && !params.label) assert.match(detail[0], /INDEX emails_trash /, where);
    }
  }
});

test.run();
