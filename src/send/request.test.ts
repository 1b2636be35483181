// parseSendRequest, the edge of every API send: each refusal is an ApiError 400 (or the section 8 code)
// whose message starts with the field's path and whose errors list names it; what compose would refuse
// later (a Message-ID, a media type) is refused here, by the same rule.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../errors.ts';
import { compose, ComposeError } from '../mail/compose.ts';
import { MAX_CUSTOM_HEADERS, parseSendRequest } from './request.ts';

const base = { from: 'a@sender.test', to: ['x@dest.test'], subject: 's', text: 't' };

function refusal(body: unknown): ApiError {
  try {
    parseSendRequest(body);
  } catch (err) {
    assert.instance(err, ApiError);
    return err as ApiError;
  }
  assert.unreachable(`accepted ${JSON.stringify(body).slice(0, 200)}`);
  throw new Error('unreachable');
}

function expectRefused(body: unknown, path: string, code = 'validation_error', status = 400) {
  const err = refusal(body);
  assert.is(err.status, status, err.message);
  assert.is(err.code, code, err.message);
  assert.ok(err.message.startsWith(`${path}: `), `${err.message} names ${path}`);
  assert.is(err.errors?.[0]?.path, path);
  assert.ok(err.errors?.[0]?.message);
}

const BAD_ADDRESSES = [
  'a b@x.test',
  'Name <a@x.test> junk',
  'a@x.test.',
  '"unbalanced <a@x.test>',
  'Name <a@x.test',
  '<a@x.test> b@y.test',
  'a@x.test <b@y.test>',
  'a@x.test (c)',
  '@x.test',
  'a@b@x.test',
  '=?utf-8?B?YWRtaW5AYmFuay5jb20=?= <a@x.test>',
];

test('an address the strict grammar refuses is a 400 naming its place, in every address field', () => {
  for (const bad of BAD_ADDRESSES) {
    expectRefused({ ...base, to: ['ok@dest.test', bad] }, 'to.1');
    expectRefused({ ...base, to: bad }, 'to');
    expectRefused({ ...base, cc: [bad] }, 'cc.0');
    expectRefused({ ...base, bcc: bad }, 'bcc');
    expectRefused({ ...base, reply_to: [bad] }, 'reply_to.0');
    expectRefused({ ...base, from: bad.replace(/x\.test/g, 'sender.test') }, 'from');
  }
  expectRefused({ ...base, to: 5 }, 'to');
  expectRefused({ ...base, to: [] }, 'to');
});

test('the accepted address forms arrive as the mailbox meant', () => {
  const req = parseSendRequest({
    ...base,
    from: '"Sender, The" <a@sender.test>',
    to: ['x@dest.test', 'Name <y@dest.test>', '"Name with \\"quotes\\"" <z@dest.test>', 'Jörg Müller <j+tag@bücher.test>', '<w@dest.test>'],
  });
  assert.equal(req.from, { name: 'Sender, The', address: 'a@sender.test' });
  assert.equal(req.to, [
    { address: 'x@dest.test' },
    { name: 'Name', address: 'y@dest.test' },
    { name: 'Name with "quotes"', address: 'z@dest.test' },
    { name: 'Jörg Müller', address: 'j+tag@xn--bcher-kva.test' },
    { address: 'w@dest.test' },
  ]);
});

const composes = async (inReplyTo: string) => {
  try {
    await compose({ messageId: 'm@sender.test', date: 0, from: { address: 'a@sender.test' }, to: [{ address: 'x@dest.test' }], cc: [], replyTo: [], subject: 's', text: 't', headers: {}, attachments: [], inReplyTo, references: [inReplyTo] });
    return true;
  } catch (err) {
    if (err instanceof ComposeError) return false;
    throw err;
  }
};

test('in_reply_to: accepted exactly when compose takes it, with or without one pair of angle brackets', async () => {
  const values = [
    'parent@dest.test', '<parent@dest.test>', 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV', '<em_01ARZ3NDEKTSV4RRFFQ69G5FAV>', 'no-at-sign',
    `${'p'.repeat(985)}@dest.test`, `<${'p'.repeat(985)}@dest.test>`, `${'p'.repeat(986)}@dest.test`,
    'a b@dest.test', '<a@b> <c@d>', '<<a@b>>', '<a@b', 'a@b>', 'a<b@c', '<>', '', ' ', 'a\tb@c', 'a@b\u0000',
  ];
  for (const value of values) {
    let edge: string | null = null;
    try {
      edge = parseSendRequest({ ...base, in_reply_to: value }).inReplyTo ?? null;
    } catch (err) {
      assert.instance(err, ApiError);
      assert.is((err as ApiError).code, 'validation_error');
      assert.ok((err as ApiError).message.startsWith('in_reply_to: '), (err as ApiError).message);
    }
    const bare = /^<(.*)>$/.exec(value)?.[1] ?? value;
    assert.is(edge !== null, await composes(bare), `edge and compose agree on ${JSON.stringify(value).slice(0, 40)}`);
    if (edge !== null) assert.is(edge, bare, 'the brackets are taken off at the edge');
  }
});

test('headers: at most 100, a 400 validation_error naming headers; __proto__ is named, not dropped', () => {
  const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));
  assert.is(Object.keys(parseSendRequest({ ...base, headers: headers(MAX_CUSTOM_HEADERS) }).headers).length, 100);
  expectRefused({ ...base, headers: headers(MAX_CUSTOM_HEADERS + 1) }, 'headers');
  expectRefused({ ...base, headers: JSON.parse('{"X-A": "b", "__proto__": "x"}') }, 'headers.__proto__');
  expectRefused({ ...base, headers: { 'X-A': 'b\r\nBcc: v@evil.test' } }, 'headers.X-A');
});

const withType = (content_type: string) => ({ ...base, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type }] });

test('attachment media types: parameters are accepted and written in one canonical form', () => {
  const cases: Array<[string, string]> = [
    ['application/pdf', 'application/pdf'],
    ['Application/PDF', 'application/pdf'],
    ['text/html; charset=utf-8', 'text/html; charset=utf-8'],
    ['text/plain; charset="utf-8"; format=flowed', 'text/plain; charset=utf-8; format=flowed'],
    ['text/plain;charset=UTF-8', 'text/plain; charset=UTF-8'],
    ['application/x-thing; a="x;y"', 'application/x-thing; a="x;y"'],
    ['image/svg+xml', 'image/svg+xml'],
  ];
  for (const [given, stored] of cases) assert.is(parseSendRequest(withType(given)).attachments[0].contentType, stored, given);
  assert.is(parseSendRequest({ ...base, attachments: [{ filename: 'a.bin', content: 'aGk=' }] }).attachments[0].contentType, 'application/octet-stream');
});

test('attachment media types that could break or inject a header are refused, naming the field', () => {
  for (const bad of [
    'text/plain\r\nX-Injected: y',
    'text/plain; charset=utf-8\r\nBcc: v@evil.test',
    'text/plain; charset=utf-8\nX: y',
    'text/plain; garbage',
    'text/plain;',
    'text/plain; charset="utf-8',
    'text/plain; charset=utf 8',
    'text/plain; a="é"',
    'text/plain, text/html',
    'text',
    'text/plain; a=b; A=c',
    'multipart/mixed; boundary=x',
    `text/plain; a=${'b'.repeat(300)}`,
  ]) {
    expectRefused(withType(bad), 'attachments.0.content_type');
  }
});

test('a media type with parameters keeps them in the composed MIME part', async () => {
  const req = parseSendRequest(withType('text/plain; charset="utf-8"; format=flowed'));
  const raw = await compose({ messageId: 'm@sender.test', date: 0, from: req.from, to: req.to, cc: [], replyTo: [], subject: 's', text: 't', headers: {}, attachments: req.attachments });
  assert.match(raw.toString('latin1'), /\r\nContent-Type: text\/plain; charset=utf-8; format=flowed; name=a\.txt\r\n/);
});

test.run();
