// The box's own short messages (a delivery notice): what mailparser, as any mail client, reads back from them,
// the body in 7bit or base64 as it needs, and header fields that could break the message refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { plainMessage, type PlainMessage } from './plain-message.ts';

const base: PlainMessage = {
  from: { name: 'Mail Delivery Subsystem', address: 'mailer-daemon@mx.example' },
  to: { address: 'owner@shop.example' },
  subject: 'Delivery Status Notification (Failure)',
  date: Date.UTC(2026, 10, 21, 10, 5),
  messageId: 'notice.1@mx.example',
  inReplyTo: 'orig@shop.example',
  references: ['first@shop.example', 'orig@shop.example'],
  headers: { 'Auto-Submitted': 'auto-generated' },
  text: 'Address not found\n\nThe response was:\n  550 5.1.1 user unknown\n',
};

test('ASCII text in short lines goes as 7bit and reads back with its threading fields', async () => {
  const raw = plainMessage(base);
  assert.match(raw.toString(), /\r\nContent-Transfer-Encoding: 7bit\r\n/);
  assert.not.match(raw.toString().replace(/\r\n/g, ''), /\n/, 'CRLF line ends only');
  const m = await simpleParser(raw);
  assert.equal([m.from?.value[0], m.to && !Array.isArray(m.to) && m.to.value[0].address], [{ name: 'Mail Delivery Subsystem', address: 'mailer-daemon@mx.example' }, 'owner@shop.example']);
  assert.equal([m.subject, m.messageId, m.inReplyTo, m.references], [base.subject, '<notice.1@mx.example>', '<orig@shop.example>', ['<first@shop.example>', '<orig@shop.example>']]);
  assert.equal([m.date?.toISOString(), m.headers.get('auto-submitted'), m.text], ['2026-11-21T10:05:00.000Z', 'auto-generated', base.text]);
});

test('text that is not ASCII, or has a line past 998 characters, goes as base64 and reads back the same', async () => {
  for (const text of ['Adresse introuvable : «müller@exämple.de»\n', `${'x'.repeat(1200)}\n`]) {
    const raw = plainMessage({ ...base, text });
    assert.match(raw.toString(), /\r\nContent-Transfer-Encoding: base64\r\n/);
    assert.ok(raw.toString().split('\r\n').every((l) => l.length <= 998));
    assert.is((await simpleParser(raw)).text, text);
  }
});

test('a header field with a line break or a non-ASCII character is refused', () => {
  assert.throws(() => plainMessage({ ...base, subject: 'Hi\r\nBcc: x@y' }), /Subject field/);
  assert.throws(() => plainMessage({ ...base, headers: { 'X-Note': 'café' } }), /X-Note field/);
});

test.run();
