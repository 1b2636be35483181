// The edges of a send over real HTTP: addresses a lenient parser would turn into another
// recipient, in_reply_to values compose would refuse, too many headers and bad media types are each a 400 in
// the error envelope naming the field, and nothing is stored or queued; the accepted forms (a media type with
// parameters, quoted display names, a bracketed Message-ID) arrive at the recipients' MX as given.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { request } from '../testkit/app.ts';
import { value } from '../db/query.ts';

let s: OutboundScene;

test.before(async () => {
  s = await startOutboundScene();
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

const count = async (table: 'emails' | 'deliveries') => Number(await s.t.app.store.read(value<number>(`SELECT count(*) FROM ${table}`)));
const deliveredTo = (recipient: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(recipient)), 10_000, `a message for ${recipient}`);
const base = { from: 'a@sender.test', to: ['x@dest.test'], subject: 's', text: 't' };

const REFUSED: Array<[string, Record<string, unknown>, string]> = [
  ['a space in the local part (would go to b@dest.test)', { ...base, to: ['a b@dest.test'] }, 'to.0'],
  ['text after the angle-addr', { ...base, to: ['Name <a@dest.test> junk'] }, 'to.0'],
  ['a trailing dot', { ...base, to: ['ok@dest.test', 'a@dest.test.'] }, 'to.1'],
  ['an unbalanced quote', { ...base, cc: ['"unbalanced <a@dest.test>'] }, 'cc.0'],
  ['an unbalanced bracket', { ...base, bcc: 'Name <a@dest.test' }, 'bcc'],
  ['a second address after the angle-addr', { ...base, to: ['<a@dest.test> b@dest.test'] }, 'to.0'],
  ['an address as the display name', { ...base, to: ['a@dest.test <b@dest.test>'] }, 'to.0'],
  ['a comment', { ...base, reply_to: ['r@sender.test (comment)'] }, 'reply_to.0'],
  ['no local part', { ...base, to: ['@dest.test'] }, 'to.0'],
  ['several @', { ...base, to: ['a@b@dest.test'] }, 'to.0'],
  ['an encoded-word display name', { ...base, from: '=?utf-8?B?YWRtaW5AYmFuay5jb20=?= <a@sender.test>' }, 'from'],
  ['a sender with text after it', { ...base, from: 'Name <a@sender.test> x@other.test' }, 'from'],
  ['in_reply_to with a space', { ...base, in_reply_to: '<a b@dest.test>' }, 'in_reply_to'],
  ['in_reply_to with two ids', { ...base, in_reply_to: '<a@dest.test> <b@dest.test>' }, 'in_reply_to'],
  ['in_reply_to with doubled brackets', { ...base, in_reply_to: '<<a@dest.test>>' }, 'in_reply_to'],
  ['in_reply_to too long for one header line', { ...base, in_reply_to: `<${'p'.repeat(990)}@dest.test>` }, 'in_reply_to'],
  ['in_reply_to: an unknown em_ id', { ...base, in_reply_to: 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV' }, 'in_reply_to'],
  ['101 custom headers', { ...base, headers: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers'],
  ['a media type with a garbage parameter', { ...base, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text/plain; garbage' }] }, 'attachments.0.content_type'],
  ['a media type with an unbalanced quote', { ...base, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text/plain; charset="utf-8' }] }, 'attachments.0.content_type'],
  ['a media type with CRLF', { ...base, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text/plain; charset=utf-8\r\nBcc: v@evil.test' }] }, 'attachments.0.content_type'],
];

test('each bad edge is a 400 in the error envelope naming the field, and nothing is stored or queued', async () => {
  const before = { emails: await count('emails'), deliveries: await count('deliveries') };
  for (const [what, body, path] of REFUSED) {
    const res = await s.send(body);
    assert.is(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
    const { error } = res.body;
    assert.is(error.status, 400, what);
    assert.is(error.code, 'validation_error', what);
    assert.ok(error.message.startsWith(`${path}: `), `${what}: ${error.message}`);
    assert.is(error.errors[0].path, path, what);
    assert.type(error.errors[0].message, 'string');
  }
  assert.equal({ emails: await count('emails'), deliveries: await count('deliveries') }, before, 'no email row and no queue row');
  assert.is(s.sink.messages.length, 0);
});

test('a batch judges each item at the same edge: the bad one fails alone, naming its field', async () => {
  const before = await count('emails');
  const res = await request(`${s.t.api}/emails/batch`, { key: s.key, body: { emails: [{ ...base, to: ['batch-ok@dest.test'] }, { ...base, to: ['a b@dest.test'] }] } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal([res.body.successful, res.body.failed], [1, 1]);
  assert.equal([res.body.data[1].ok, res.body.data[1].error.code], [false, 'validation_error']);
  assert.match(res.body.data[1].error.message, /^to\.0: /);
  assert.is(await count('emails'), before + 1);
  await deliveredTo('batch-ok@dest.test');

  const strict = await request(`${s.t.api}/emails/batch`, { key: s.key, body: [{ ...base, to: ['strict-ok@dest.test'] }, { ...base, in_reply_to: '<a> <b>' }], headers: { 'x-batch-validation': 'strict' } });
  assert.is(strict.status, 400);
  assert.is(strict.body.error.errors[0].path, 'emails.1.in_reply_to');
  assert.is(await count('emails'), before + 1, 'a strict batch with a bad item stores nothing');
});

test('a media type with parameters reaches the part intact; quoted names and a bracketed Message-ID go out as given', async () => {
  const res = await s.send({
    from: '"Sender, The" <a@sender.test>',
    to: ['"Last, First" <edge@dest.test>', 'Jörg Müller <jm+tag@dest.test>'],
    subject: 'media types',
    text: 'see attached',
    in_reply_to: '<parent.1@elsewhere.test>',
    headers: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`X-H${i}`, `v${i}`])),
    attachments: [{ filename: 'notes.txt', content: Buffer.from('hello flowed\r\n').toString('base64'), content_type: 'text/plain; charset="utf-8"; format=flowed' }],
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const m = await deliveredTo('edge@dest.test');
  assert.equal([...m.rcptTo].sort(), ['edge@dest.test', 'jm+tag@dest.test'], 'exactly the intended recipients');
  const raw = m.raw.toString('latin1');
  assert.match(raw, /\r\nContent-Type: text\/plain; charset=utf-8; format=flowed; name=notes\.txt\r\n/);
  const parsed = await simpleParser(m.raw);
  const part = parsed.attachments[0];
  assert.equal([part.filename, part.contentType, part.content.toString()], ['notes.txt', 'text/plain', 'hello flowed\r\n']);
  assert.equal((part.headers.get('content-type') as { params: Record<string, string> }).params, { charset: 'utf-8', format: 'flowed', name: 'notes.txt' });
  assert.is(parsed.from?.text, '"Sender, The" <a@sender.test>');
  assert.equal((Array.isArray(parsed.to) ? parsed.to[0] : parsed.to)!.value.map((v) => [v.name, v.address]), [['Last, First', 'edge@dest.test'], ['Jörg Müller', 'jm+tag@dest.test']]);
  assert.is(parsed.inReplyTo, '<parent.1@elsewhere.test>');
  assert.is(parsed.headers.get('x-h99'), 'v99');
  assert.is((await s.dkim(m.raw)).status, 'pass');
});

test.run();
