// The owner's allow and block lists, the sender's history and the queue of what the model is to learn, on a
// real SQLite file opened and migrated as the app does: entries checked into one stored form (and refused with
// the reason), the most specific entry winning, reputation from what the workspace wrote and kept, and the
// newest wish for an email winning except over the owner's word. Every statement is per workspace.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../db/open.ts';
import { migrate } from '../db/migrate.ts';
import { addEntry, listEntries, matchSender, matchSenders, parseEntry, removeEntry } from './lists.ts';
import { FIRST_CONTACT, LEAN, noteKept, noteReported, noteWrote, reputationOf } from './history.ts';
import { dueTraining, learnFromSend, MAX_ATTEMPTS, pendingTraining, queueTraining, retryJob, trainJob } from './learning.ts';
import type { DbContext } from '../db/writer.ts';
import { modelStats, train, trainedAs } from './store.ts';
import { runOn } from '../db/sqlite-query.ts';

const T0 = Date.UTC(2026, 0, 1);
let seq = 0;

function freshDb(): Db {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'mw-lists-')));
  migrate(db);
  for (const ws of ['ws_a', 'ws_b']) db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(ws, ws, T0);
  return db;
}

function received(db: Db, workspaceId: string, from = 'a@x.example', messageId = `m${++seq}@x.example`, category = 'primary'): string {
  const id = `em_${String(++seq).padStart(26, '0')}`;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, category, created_at) VALUES (?, ?, 'in', 'received', ?, ?, ?, ?, ?)").run(
    id, workspaceId, messageId, id, from, category, T0,
  );
  return id;
}

test('entries: addresses and domains in one stored form, or the reason they are refused', () => {
  const ok: Array<[string, string, string]> = [
    ['Alice@Example.COM', 'alice@example.com', 'address'],
    ['  example.com ', 'example.com', 'domain'],
    ['@Example.com', 'example.com', 'domain'],
    ['*.mail.example.com', 'mail.example.com', 'domain'],
    ['bücher.example', 'xn--bcher-kva.example', 'domain'],
    ['example.co.uk', 'example.co.uk', 'domain'],
  ];
  for (const [input, entry, kind] of ok) assert.equal(parseEntry(input), { ok: true, entry, kind }, input);
  const refused: Array<[string, string]> = [
    ['', 'is empty: give an address (a@example.com) or a domain (example.com)'],
    ['com', '"com" must have at least two labels, such as example.com'],
    ['co.uk', '"co.uk" is a public suffix, shared by unrelated senders: give a domain under it, such as example.co.uk'],
    ['github.io', '"github.io" is a public suffix, shared by unrelated senders: give a domain under it, such as example.github.io'],
    ['192.0.2.1', '"192.0.2.1" must be a domain name, not an IP address'],
    ['a@@b.example', '"a@@b.example" has more than one @'],
    ['https://example.com/x', '"https://example.com/x" must be a bare domain name such as example.com, without scheme, port, path or spaces'],
    ['x'.repeat(321), 'is longer than 320 characters'],
  ];
  for (const [input, reason] of refused) assert.equal(parseEntry(input), { ok: false, reason }, input);
});

test('lists: one list per entry, pages newest first, the most specific entry covers a sender, per workspace', () => {
  const db = freshDb();
  const add = (ws: string, list: 'allow' | 'block', s: string, at: number) => runOn(db, addEntry(ws, list, parseEntry(s) as { entry: string; kind: 'address' | 'domain' }, at));
  assert.equal(add('ws_a', 'block', 'spam.example', T0), { added: { entry: 'spam.example', type: 'domain', createdAt: '2026-01-01T00:00:00.000Z' } });
  assert.equal(add('ws_a', 'allow', 'friend@spam.example', T0 + 1), { added: { entry: 'friend@spam.example', type: 'address', createdAt: '2026-01-01T00:00:00.001Z' } });
  assert.equal(add('ws_a', 'allow', 'spam.example', T0 + 2), { exists: 'block' });
  assert.equal(add('ws_a', 'block', 'SPAM.example', T0 + 2), { exists: 'block' });
  add('ws_a', 'block', 'news.spam.example', T0 + 3);

  assert.equal(runOn(db, matchSender('ws_a', 'Friend@Spam.Example')), { list: 'allow', entry: 'friend@spam.example', kind: 'address' });
  assert.equal(runOn(db, matchSender('ws_a', 'other@spam.example')), { list: 'block', entry: 'spam.example', kind: 'domain' });
  assert.equal(runOn(db, matchSender('ws_a', 'x@a.news.spam.example')), { list: 'block', entry: 'news.spam.example', kind: 'domain' });
  assert.is(runOn(db, matchSender('ws_a', 'x@notspam.example')), null);
  assert.is(runOn(db, matchSender('ws_a', '')), null);
  assert.is(runOn(db, matchSender('ws_b', 'other@spam.example')), null);
  // Several senders in one read (a From and its envelope), each matched on its own.
  assert.equal(runOn(db, matchSenders('ws_a', ['friend@spam.example', '', 'x@notspam.example', 'x@a.news.spam.example'])), [
    { list: 'allow', entry: 'friend@spam.example', kind: 'address' },
    null,
    null,
    { list: 'block', entry: 'news.spam.example', kind: 'domain' },
  ]);

  assert.equal(runOn(db, listEntries('ws_a', 'block', { limit: 10, offset: 0 })).map((e) => e.entry), ['news.spam.example', 'spam.example']);
  assert.equal(runOn(db, listEntries('ws_a', 'block', { limit: 1, offset: 1 })).map((e) => e.entry), ['spam.example']);
  assert.equal(runOn(db, listEntries('ws_b', 'block', { limit: 10, offset: 0 })), []);
  assert.not.ok(runOn(db, removeEntry('ws_b', 'block', 'spam.example')));
  assert.not.ok(runOn(db, removeEntry('ws_a', 'allow', 'spam.example')));
  assert.ok(runOn(db, removeEntry('ws_a', 'block', 'spam.example')));
  assert.is(runOn(db, matchSender('ws_a', 'other@spam.example')), null);
});

test('reputation: written to, kept, reported; the domain only for an authenticated From; per workspace', () => {
  const db = freshDb();
  const rep = (address: string, auth = true, ws = 'ws_a') => runOn(db, reputationOf(ws, address, auth));
  assert.equal(rep('new@x.example'), { kind: 'reputation', detail: FIRST_CONTACT, weight: 0.5 });
  runOn(db, noteWrote('ws_a', ['Bob@Corp.example'], T0));
  assert.equal(rep('bob@corp.example'), { kind: 'reputation', detail: 'You wrote to this sender before', weight: LEAN.wroteAddress });
  assert.equal(rep('bob@corp.example', false), { kind: 'reputation', detail: 'You wrote to this sender before (the From address is not authenticated, so it counts for less)', weight: LEAN.unauthenticated });
  assert.equal(rep('carol@corp.example'), { kind: 'reputation', detail: 'You wrote to or kept mail from others at corp.example', weight: LEAN.domain });
  assert.is(rep('carol@corp.example', false).detail, FIRST_CONTACT);
  assert.is(rep('bob@corp.example', true, 'ws_b').detail, FIRST_CONTACT);

  runOn(db, noteKept('ws_a', 'news@shop.example', T0));
  assert.equal(rep('news@shop.example'), { kind: 'reputation', detail: "You kept this sender's mail out of Spam before", weight: LEAN.keptAddress });
  runOn(db, noteReported('ws_a', 'news@shop.example', T0 + 1));
  assert.equal(rep('news@shop.example'), { kind: 'reputation', detail: "You reported this sender's mail as spam before", weight: 0.5 });
  assert.is(rep('other@shop.example').detail, FIRST_CONTACT);
  runOn(db, noteKept('ws_a', 'news@shop.example', T0 + 2));
  assert.is(rep('news@shop.example').weight, LEAN.keptAddress);
});

test('training wishes: the newest wins, the box never overrides the owner, nothing queued for what was learned so', () => {
  const db = freshDb();
  const id = received(db, 'ws_a');
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'spam', source: 'owner', now: T0 }));
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'ham', source: 'auto', now: T0 + 1 }));
  assert.equal(runOn(db, dueTraining(T0 + 5, 10)).map((w) => [w.class, w.source, w.queuedAt]), [['spam', 'owner', T0]]);
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'ham', source: 'owner', now: T0 + 2 }));
  assert.equal(runOn(db, dueTraining(T0 + 5, 10)).map((w) => [w.class, w.source, w.queuedAt]), [['ham', 'owner', T0 + 2]]);
  assert.is(runOn(db, pendingTraining('ws_a')), 1);
  assert.is(runOn(db, pendingTraining('ws_b')), 0);

  // Learned by the owner as ham already: the same wish again is dropped, not queued.
  runOn(db, train({ workspaceId: 'ws_a', emailId: id, class: 'ham', tokens: ['a'], source: 'owner', now: T0 }));
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'ham', source: 'owner', now: T0 + 3 }));
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'ham', source: 'auto', now: T0 + 4 }));
  assert.is(runOn(db, pendingTraining('ws_a')), 0);
});

test('a send: the owner\'s recipients become correspondents, a reply queues the received message as ham', () => {
  const db = freshDb();
  const asked = received(db, 'ws_a', 'dave@client.example', 'question.1@client.example');
  const inSpam = received(db, 'ws_a', 'eve@spam.example', 'offer.1@spam.example', 'spam');
  const send = (recipients: string[], inReplyTo: string | null, byOwner = true, bulk = false) =>
    runOn(db, learnFromSend({ workspaceId: 'ws_a', recipients, inReplyTo, byOwner, bulk, now: T0 }));
  send(['dave@client.example'], 'question.1@client.example');
  assert.equal(runOn(db, dueTraining(T0, 10)).map((w) => [w.emailId, w.class, w.source]), [[asked, 'ham', 'auto']]);
  assert.is(runOn(db, reputationOf('ws_a', 'dave@client.example', true)).weight, LEAN.wroteAddress);
  // A reply to mail in Spam teaches nothing; nor do the box's own mail, marketing and test sends.
  send(['eve@spam.example'], 'offer.1@spam.example');
  assert.is(runOn(db, dueTraining(T0, 10)).length, 1);
  send(['forward@owner.example'], null, false);
  send(['list@people.example'], null, true, true);
  assert.is(runOn(db, reputationOf('ws_a', 'forward@owner.example', true)).detail, FIRST_CONTACT);
  assert.is(runOn(db, reputationOf('ws_a', 'list@people.example', true)).detail, FIRST_CONTACT);
  void inSpam;
});

test('the writer jobs: a wish learned once and only as it stands; a failed one waits longer each time, then is dropped', () => {
  const db = freshDb();
  let now = T0;
  const ctx = { db, clock: { now: () => now }, log: { info() {}, warn() {}, error() {} } } as unknown as DbContext;
  const id = received(db, 'ws_a');
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'spam', source: 'owner', now: T0 }));
  // Tokens made for a wish the owner has since changed are not learned: the newer wish is, in its turn.
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: id, class: 'ham', source: 'owner', now: T0 + 1 }));
  assert.is(runOn(db, trainJob(ctx, { emailId: id, workspaceId: 'ws_a', queuedAt: T0, tokens: ['x'] })), null);
  assert.is(runOn(db, trainJob(ctx, { emailId: id, workspaceId: 'ws_b', queuedAt: T0 + 1, tokens: ['x'] })), null);
  assert.equal(runOn(db, trainJob(ctx, { emailId: id, workspaceId: 'ws_a', queuedAt: T0 + 1, tokens: ['x'] })), { outcome: 'learned', pruneDue: false });
  assert.equal(runOn(db, trainedAs('ws_a', id)), { class: 'ham', source: 'owner' });
  assert.equal([runOn(db, modelStats('ws_a')).ham, runOn(db, pendingTraining('ws_a'))], [1, 0]);

  const other = received(db, 'ws_a');
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: other, class: 'spam', source: 'owner', now: T0 }));
  const waits: number[] = [];
  for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
    assert.not.ok(runOn(db, retryJob(ctx, { emailId: other, queuedAt: T0, giveUp: false })));
    const next = (db.prepare('SELECT next_at FROM spam_filter_pending WHERE email_id = ?').pluck().get(other) as number) - now;
    waits.push(next);
    assert.equal(runOn(db, dueTraining(now, 10)), []);
    now += next;
  }
  assert.equal(waits, [30_000, 60_000, 120_000, 240_000]);
  assert.ok(runOn(db, retryJob(ctx, { emailId: other, queuedAt: T0, giveUp: false })));
  assert.is(runOn(db, pendingTraining('ws_a')), 0);
  // No raw bytes left to learn from: dropped at once.
  runOn(db, queueTraining({ workspaceId: 'ws_a', emailId: other, class: 'spam', source: 'owner', now }));
  assert.ok(runOn(db, retryJob(ctx, { emailId: other, queuedAt: now, giveUp: true })));
  assert.is(runOn(db, pendingTraining('ws_a')), 0);
});

test.run();
