// Packing mail at rest: whatever goes in comes out byte for byte (bodies, messages against their bodies, packed
// or stored as strings), values written before packing read as they are, a compressible message is stored in
// far fewer bytes, and a value read against other bodies, or damaged, throws instead of reading as other bytes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { deflateSync } from 'node:zlib';
import {
  bodiesDictionary, copyDictionary, copyPackedAgainst, isPacked, lineBodiesDictionary, packAgainstCopy, packBodies, packMail, packMessage, unpackAgainstCopy, unpackBodies, unpackHtml, unpackMessage, unpackMessageAsync, unpackText,
} from './packing.ts';
import { compose } from './compose.ts';
import { quotedPrintable, wireLines } from './wire-form.ts';

const TEXT = 'Hello Ann,\n\nThe invoice for March is attached; thanks for your order.\n\n-- \nBob\n';
const HTML = `<html><body><p>Hello Ann,</p><p>The invoice for <b>March</b> is attached; thanks for your order.</p><p>Bob</p></body></html>`;
const message = (body: string) =>
  Buffer.from(
    `Received: from mail.sender.example (mail.sender.example [192.0.2.1])\r\n\tby mx.box.example (Mailwright) with ESMTPS id 1;\r\n\tSat, 21 Nov 2026 10:00:00 +0000\r\n` +
      `From: Bob <bob@sender.example>\r\nTo: ann@box.example\r\nSubject: March\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body.replace(/\n/g, '\r\n')}`,
  );

test('a message round-trips against its bodies, packed or stored as strings, and is much smaller when it repeats them', () => {
  const text = TEXT.repeat(40);
  const raw = message(text);
  const packed = packMail(raw, text, HTML);
  assert.ok(isPacked(packed.raw) && Buffer.isBuffer(packed.text) && Buffer.isBuffer(packed.html));
  assert.ok(unpackMessage(packed.raw, packed).equals(raw), 'against the packed bodies');
  assert.ok(unpackMessage(packed.raw, { text, html: HTML }).equals(raw), 'against the same bodies stored as strings');
  assert.equal(unpackBodies(packed), { text, html: HTML });
  assert.is(unpackText(packed.text), text);
  assert.is(unpackHtml(packed.html, packed.text), HTML);
  assert.ok(packed.raw.length < raw.length / 10, `the bytes cost ${packed.raw.length} beside their bodies, for ${raw.length}`);
  assert.ok((packed.text as Buffer).length < Buffer.byteLength(text) / 10, 'the repetitive text packs small');
  assert.is(packed.size, raw.length);
  assert.is(packed.alone, null, 'packed alone only when asked');
});

test('packed alone (a kept report), a message needs no bodies; asked to, it never reads without them', () => {
  const raw = message(TEXT);
  const packed = packMail(raw, TEXT, null, { alone: true });
  assert.ok(unpackMessage(packed.alone!, null).equals(raw));
  assert.throws(() => unpackMessage(packed.raw, null), /packed against its bodies/);
});

test('a copy packed against another copy names it, costs its differences, reads back only against that copy, and never as plain bytes', async () => {
  const base = message(TEXT.repeat(40).replace('March', 'March https://box.example/t/aaaaaaaaaaaaaaaa'));
  const copy = message(TEXT.repeat(40).replace('March', 'March https://box.example/t/bbbbbbbbbbbbbbbb'));
  const packed = packAgainstCopy(copy, { id: 281_474_976_710_000, raw: base });
  assert.is(copyPackedAgainst(packed), 281_474_976_710_000, 'the id survives in 6 bytes');
  assert.not.ok(isPacked(packed));
  assert.is(copyPackedAgainst(packMessage(copy, null)), null);
  assert.is(copyPackedAgainst(copy), null, 'a message as it is names no copy');
  assert.ok(packed.length < copy.length / 20, `${packed.length} bytes for a copy of ${copy.length} that differs in a link`);
  assert.ok((await unpackAgainstCopy(packed, base)).equals(copy));
  await unpackAgainstCopy(packed, copy).then(
    () => assert.unreachable('read against another copy'),
    (err) => assert.match(String(err), /dictionary/i),
  );
  assert.throws(() => unpackMessage(packed, null), /packed against another copy/);
  await unpackMessageAsync(packed, null).then(
    () => assert.unreachable('read without its copy'),
    (err) => assert.match(String(err), /packed against another copy/),
  );
});

test('a copy over 32 KiB packed against the last 32 KiB of its base (what the signing thread is given) reads back against the whole base', async () => {
  const body = Array.from({ length: 2000 }, (_, i) => `line ${i} of a long letter with words ${(i * 7919) % 1000}`).join('\n');
  const base = message(`${body}\nhttps://box.example/t/aaaaaaaaaaaaaaaa\n`);
  const copy = message(`${body}\nhttps://box.example/t/bbbbbbbbbbbbbbbb\n`);
  assert.ok(base.length > 64 * 1024);
  const dictionary = copyDictionary(base);
  assert.is(dictionary.length, 32 * 1024);
  const packed = packAgainstCopy(copy, { id: 7, raw: dictionary });
  assert.ok((await unpackAgainstCopy(packed, base)).equals(copy));
  assert.ok((await unpackAgainstCopy(packed, dictionary)).equals(copy));
});

test('values written before packing read as they are: a message is its bytes, a body a string', () => {
  const old = message(TEXT);
  assert.not.ok(isPacked(old));
  assert.is(unpackMessage(old, { text: TEXT, html: null }), old, 'the very Buffer, no copy');
  assert.is(unpackText(TEXT), TEXT);
  assert.is(unpackHtml(HTML, TEXT), HTML);
  assert.is(unpackText(null), null);
  assert.is(unpackHtml(null, TEXT), null);
});

test('a message is packed against its bodies with their lines ended as on the wire: its CRLF lines cost next to nothing', () => {
  // Irregular lines, so deflate cannot find the text's repeats within the message itself.
  const text = Array.from({ length: 150 }, (_, i) => `line ${i}: ${((i * 2654435761) % 1000003).toString(36)} of the order`).join('\n');
  const raw = message(text);
  const packed = packMail(raw, text, null);
  assert.is(packed.raw[1], 0x03, 'no quoted-printable in the message: marked as packed against the CRLF lines alone');
  assert.ok(unpackMessage(packed.raw, packed).equals(raw));
  // Against the text as stored (LF), every line would begin a new match.
  const asStored = deflateSync(raw, { level: 6, dictionary: Buffer.from(text) }).length;
  assert.ok(packed.raw.length < asStored / 2, `${packed.raw.length} bytes beside the bodies, against ${asStored} as stored`);
});

test('the CRLF dictionary (0x03) is each body with a CR before each bare LF, the text then the HTML, their last 32 KiB', () => {
  // Stored messages were packed against exactly these bytes: the rule may not change.
  const dict = (text: string | null, html: string | null) => lineBodiesDictionary(text === null ? null : Buffer.from(text, 'latin1'), html === null ? null : Buffer.from(html, 'latin1'));
  assert.is(dict('a\nb\r\nc\r', '\nd\n')!.toString('latin1'), 'a\r\nb\r\nc\r\r\nd\r\n', "the HTML's first LF is bare even after the text's CR");
  assert.is(dict('\n\n', null)!.toString('latin1'), '\r\n\r\n');
  assert.is(dict(null, 'x')!.toString('latin1'), 'x');
  assert.is(dict(null, null), null);
  assert.is(dict('', ''), null);
  const long = 'y'.repeat(40_000);
  assert.is(dict(long, 'z\n')!.toString('latin1'), `${'y'.repeat(32 * 1024 - 3)}z\r\n`);
  assert.is(dict('é\n', null)!.toString('latin1'), 'é\r\n', 'bytes, whatever they encode');
  // wireLines takes a shortcut for bodies without a CR; with or without one, the rule is the look-behind's.
  const rule = (s: string) => s.replace(/(?<!\r)\n/g, '\r\n');
  fc.assert(
    fc.property(fc.array(fc.constantFrom('a', '\n', '\r', 'é', ' '), { maxLength: 16 }), (chars) => wireLines(Buffer.from(chars.join(''), 'latin1')) === rule(chars.join(''))),
    { numRuns: 2000 },
  );
});

test('the dictionary (0x04) is the CRLF forms, then each body as quoted-printable where that differs, their last 32 KiB', () => {
  // Stored messages are packed against exactly these bytes: the rule may not change.
  const dict = (text: string | null, html: string | null) => bodiesDictionary(text === null ? null : Buffer.from(text), html === null ? null : Buffer.from(html))?.toString('latin1') ?? null;
  assert.is(dict('plain ASCII\nin short lines\n', null), 'plain ASCII\r\nin short lines\r\n', 'no second form when quoted-printable would be the same');
  assert.is(dict('Zoë = 1 \n', '<p>Zoë</p>'), 'Zo\xc3\xab = 1 \r\n<p>Zo\xc3\xab</p>' + 'Zo=C3=AB =3D 1=20\r\n' + '<p>Zo=C3=AB</p>', "escapes, '=' and a space before a line end included");
  const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
  const lines = dict(null, `${words}\n`)!.slice(words.length + 2).split('\r\n');
  assert.equal(lines.map((l) => l.length), [75, 71, 55, 0], 'soft breaks after the last space within 76 characters');
  assert.ok(lines.slice(0, 2).every((l) => l.endsWith(' =')), 'each soft break after a space');
  assert.is(lines.join('').replace(/ =/g, ' '), words, 'the words, none lost');
  const accents = 'é'.repeat(40);
  assert.equal(dict(null, accents)!.slice(80).split('=\r\n'), ['=C3=A9'.repeat(12), '=C3=A9'.repeat(12), '=C3=A9'.repeat(12), '=C3=A9'.repeat(4)], 'never inside a UTF-8 sequence');
  const long = 'é'.repeat(20_000);
  assert.is(dict(long, null)!.length, 32 * 1024, 'the last 32 KiB');
  assert.ok(dict(long, null)!.endsWith('=C3=A9'));
});

test("a composed letter's quoted-printable parts are in the dictionary as compose writes them, so its bytes cost little beside its bodies", async () => {
  const sentences = ['Café prices rose 3 % this year—so we’re changing plans.', 'Your “starter” plan stays, with 10 = ten seats.', 'Questions? Reply to this email, we read every one!'];
  const text = Array.from({ length: 60 }, (_, i) => sentences[i % 3] + ` (${(i * 7919) % 1000})`).join(' ') + '\n\nThanks,\nZoë\n';
  const html = `<html><body><p style="font-family:Arial,sans-serif;color:#333">${text.replace(/\n/g, '<br>')}</p></body></html>`;
  const raw = await compose({ messageId: 'a1@example.com', date: 0, from: { address: 'zoe@example.com' }, to: [{ address: 'ann@example.com' }], cc: [], replyTo: [], subject: 'Plans', text, html, headers: {}, attachments: [] });
  const wire = raw.toString('latin1');
  const dictionary = bodiesDictionary(Buffer.from(text), Buffer.from(html))!.toString('latin1');
  const parts = [...wire.matchAll(/Content-Transfer-Encoding: quoted-printable\r\n(?:[^\r]+\r\n)*\r\n([^]*?)\r\n--/g)].map((m) => m[1]);
  assert.is(parts.length, 2, 'text and HTML, quoted-printable');
  for (const part of parts) assert.ok(dictionary.includes(part), `the part as written is in the dictionary: ${part.slice(0, 60)}...`);
  const packed = packMail(raw, text, html);
  assert.is(packed.raw[1], 0x04, 'marked as packed against both wire forms');
  const before = deflateSync(raw, { level: 6, dictionary: lineBodiesDictionary(Buffer.from(text), Buffer.from(html))! }).length;
  assert.ok(packed.raw.length < before * 0.7, `${packed.raw.length} bytes beside the bodies, ${before} against their CRLF forms alone`);
  assert.ok(unpackMessage(packed.raw, packed).equals(raw));
});

test('the quoted-printable forms join the dictionary only for a message that carries quoted-printable', () => {
  // Irregular lines, so deflate cannot find the text's repeats within the message itself.
  const text = Array.from({ length: 60 }, (_, i) => `Zoë paid = ${(i * 2654435761) % 1000003} € for order ${i.toString(36)}, with thanks.`).join('\n');
  const plain = message(text);
  const encoded = (cte: string) =>
    Buffer.concat([plain.subarray(0, plain.indexOf('\r\n\r\n')), Buffer.from(`\r\nContent-Transfer-Encoding: ${cte}\r\n\r\n${quotedPrintable(wireLines(Buffer.from(text)))}`, 'latin1')]);
  for (const [raw, mark, what] of [[plain, 0x03, '8bit text'], [encoded('quoted-printable'), 0x04, 'quoted-printable'], [encoded('Quoted-Printable'), 0x04, 'Quoted-Printable'], [encoded('QUOTED-PRINTABLE'), 0x04, 'QUOTED-PRINTABLE']] as const) {
    const packed = packMail(raw, text, null);
    assert.is(packed.raw[1], mark, what);
    assert.ok(unpackMessage(packed.raw, packed).equals(raw), `${what} reads back`);
    assert.ok(unpackMessage(packed.raw, { text, html: null }).equals(raw), `${what} reads back against the text as a string`);
  }
  // What each form buys: the quoted-printable message beside its bodies costs little only with the second form.
  const qp = encoded('quoted-printable');
  const withBoth = packMail(qp, text, null).raw.length;
  const linesAlone = deflateSync(qp, { level: 6, dictionary: lineBodiesDictionary(Buffer.from(text), null)! }).length;
  assert.ok(withBoth < linesAlone * 0.6, `${withBoth} bytes against both forms, ${linesAlone} against the CRLF lines alone`);
});

test('a message packed against its bodies\' CRLF forms (0x03, as mail was packed before) still reads', async () => {
  const text = 'Zoë wrote:\n' + TEXT.repeat(20);
  const raw = message(text);
  const p = packBodies(text, HTML);
  const old = Buffer.concat([Buffer.from([0x00, 0x03]), deflateSync(raw, { level: 6, dictionary: lineBodiesDictionary(Buffer.from(text), Buffer.from(HTML))! })]);
  assert.ok(isPacked(old));
  assert.ok(unpackMessage(old, p).equals(raw));
  assert.ok((await unpackMessageAsync(old, { text, html: HTML })).equals(raw));
  assert.throws(() => unpackMessage(old, { text: text + ' ', html: HTML }));
});

test('a message packed against its bodies as stored (the first packing, 0x01) still reads', () => {
  const text = TEXT.repeat(20);
  const raw = message(text);
  const p = packBodies(text, HTML);
  const dictionary = Buffer.concat([Buffer.from(text), Buffer.from(HTML)]);
  const old = Buffer.concat([Buffer.from([0x00, 0x01]), deflateSync(raw, { level: 6, dictionary })]);
  assert.ok(unpackMessage(old, p).equals(raw));
  assert.ok(unpackMessage(old, { text, html: HTML }).equals(raw));
  assert.throws(() => unpackMessage(old, { text: text + ' ', html: HTML }));
});

test('a large message packed against its bodies as stored (0x01) reads off the calling thread too', async () => {
  const text = Array.from({ length: 40_000 }, (_, i) => `line ${i} ${(i * 2654435761) % 1000003}`).join('\n');
  const raw = message(text);
  const dictionary = Buffer.from(text).subarray(-32 * 1024);
  const old = Buffer.concat([Buffer.from([0x00, 0x01]), deflateSync(raw, { level: 6, dictionary })]);
  assert.ok(old.length > 64 * 1024, 'big enough for the thread pool');
  assert.ok((await unpackMessageAsync(old, packBodies(text, null))).equals(raw));
});

test('a message that starts with NUL is packed anyway, so it never reads as a packed value', () => {
  const odd = Buffer.from([0x00, 0x01, 0x78, 0x9c, 1, 2, 3, 4, 5]);
  const packed = packMessage(odd, null);
  assert.ok(unpackMessage(packed, null).equals(odd));
});

test('a body that packing would not shrink stays a string; empty and missing bodies stay so', () => {
  const p = packBodies('Hi', '');
  assert.is(p.text, 'Hi');
  assert.is(p.html, '');
  assert.equal(packBodies(null, null), { text: null, html: null, bytes: { text: null, html: null } });
  const raw = message('Hi');
  assert.ok(unpackMessage(packMessage(raw, p.bytes), { text: 'Hi', html: '' }).equals(raw));
});

test('read against other bodies, or damaged, a packed value throws', () => {
  const text = TEXT.repeat(10);
  const packed = packMail(message(text), text, HTML);
  assert.throws(() => unpackMessage(packed.raw, { text: text + ' ', html: HTML }));
  assert.throws(() => unpackHtml(packed.html, 'another text'));
  const damaged = Buffer.from(packed.text as Buffer);
  damaged[damaged.length - 3] ^= 0xff;
  assert.throws(() => unpackText(damaged));
});

test('a large message is unpacked off the calling thread and comes back the same', async () => {
  const text = Array.from({ length: 40_000 }, (_, i) => `line ${i} ${(i * 2654435761) % 1000003}`).join('\n');
  const raw = message(text);
  const packed = packMail(raw, text, null);
  assert.ok(packed.raw.length > 64 * 1024, 'big enough for the thread pool');
  assert.ok((await unpackMessageAsync(packed.raw, packed)).equals(raw));
  assert.ok((await unpackMessageAsync(packed.raw, { text, html: null })).equals(raw));
  const alone = packMessage(raw, null);
  assert.ok((await unpackMessageAsync(alone, null)).equals(raw));
});

test('property: any bodies and any bytes come back exactly', () => {
  fc.assert(
    fc.property(fc.option(fc.string({ unit: 'grapheme', maxLength: 3000 })), fc.option(fc.string({ unit: 'grapheme', maxLength: 3000 })), fc.uint8Array({ maxLength: 5000 }), (text, html, bytes) => {
      const raw = Buffer.from(bytes);
      const p = packMail(raw, text, html, { alone: true });
      assert.equal(unpackBodies(p), { text, html });
      assert.ok(unpackMessage(p.raw, p).equals(raw));
      assert.ok(unpackMessage(p.raw, { text, html }).equals(raw));
      assert.ok(unpackMessage(p.alone!, null).equals(raw));
    }),
    { numRuns: 300 },
  );
});

test.run();
