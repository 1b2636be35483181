// SMTP submission with scoped keys: a sending key for one domain, and an inbox key, may use only the
// senders their scope allows, at MAIL FROM and in the From header; a refusal is 550 5.7.1 and stores nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createKey } from '../account/keys.ts';
import { freePort } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { submissionSession } from '../testkit/smtp-client.ts';
import { column, value } from '../db/query.ts';

let s: InboundScene;
let port: number;
let sendingKey: string;
let inboxKey: string;
let domainId: string;

test.before(async () => {
  s = await startInboundScene({ env: { MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  port = s.t.submissionPort!;
  domainId = (await s.verifiedDomain('sender.test')).id;
  s.routeTo('dest.test');
  const { store, clock } = s.t.app;
  const workspaceId = (await store.read(value<string>('SELECT workspace_id FROM domains WHERE id = ?', domainId)))!;
  sendingKey = (await store.write(() => createKey(clock, workspaceId, 'one domain', { permission: 'sending_access', domainId, inboxIds: null }))).key;
  inboxKey = (await store.write(() => createKey(clock, workspaceId, 'one inbox', { permission: 'inbox_access', domainId: null, inboxIds: [s.inbox.id] }))).key;
});
test.after(() => s.stop());

const emailCount = async () => Number(await s.t.app.store.read(value<number>('SELECT count(*) FROM emails')));

const session = (key: string) => submissionSession(port, key);

/** MAIL, RCPT, DATA with `from` in the header; the last reply. */
async function submit(key: string, envelopeFrom: string, headerFrom: string) {
  const c = await session(key);
  try {
    const mail = await c.command(`MAIL FROM:<${envelopeFrom}>`);
    if (mail.code !== 250) return mail;
    assert.is((await c.command('RCPT TO:<x@dest.test>')).code, 250);
    assert.is((await c.command('DATA')).code, 354);
    c.write(Buffer.from(`From: ${headerFrom}\r\nTo: x@dest.test\r\nSubject: scoped\r\n\r\nHello.\r\n.\r\n`));
    return await c.read(30_000);
  } finally {
    c.close();
  }
}

test('a sending key for one domain: its domain goes through, another is 550 5.7.1 at MAIL FROM and at DATA', async () => {
  const ok = await submit(sendingKey, 'app@sender.test', 'app@sender.test');
  assert.is(ok.code, 250, ok.text);
  const before = await emailCount();
  const envelope = await submit(sendingKey, 'app@in.example', 'app@sender.test');
  assert.is(envelope.code, 550);
  assert.match(envelope.text, /^5\.7\.1 .*sender\.test/);
  const header = await submit(sendingKey, '', 'app@in.example');
  assert.is(header.code, 550, header.text);
  assert.match(header.text, /^5\.7\.1 This API key cannot send from app@in\.example/);
  assert.is(await emailCount(), before, 'nothing stored');
  const stored = await s.t.app.store.read(column<string>("SELECT sent_by_key FROM emails WHERE sent_by = 'smtp'"));
  assert.is(stored.length, 1);
  assert.ok(String(stored[0]).startsWith('key_'), 'the send records its key');
});

test('an inbox key submits only from its inboxes addresses', async () => {
  const ok = await submit(inboxKey, s.inbox.address, s.inbox.address);
  assert.is(ok.code, 250, ok.text);
  const refused = await submit(inboxKey, '', 'app@sender.test');
  assert.is(refused.code, 550, refused.text);
  assert.match(refused.text, /^5\.7\.1 /);
});

test.run();
