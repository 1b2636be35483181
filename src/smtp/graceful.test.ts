// A graceful stop (what SIGTERM runs) with 20 sessions in the middle of DATA: each either gets its 250 after
// its message is committed, or a 4xx and nothing stored; every message acknowledged is in the database after
// the stop. A connection made during the stop is not taken.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { column } from '../db/query.ts';
import { readBox } from '../testkit/postgres.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';

let s: InboundScene;

test.before(async () => {
  s = await startInboundScene({});
});

test('stopping with 20 sessions in DATA loses nothing acknowledged', async () => {
  const sessions = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const c = await RawSmtp.open(s.t.smtpPort);
      await c.read();
      await c.command('EHLO client.example');
      await c.command('MAIL FROM:<alice@sender.example>');
      await c.command(`RCPT TO:<${s.inbox.address}>`);
      assert.is((await c.command('DATA')).code, 354);
      c.write(`From: alice@sender.example\r\nTo: ${s.inbox.address}\r\nSubject: graceful ${i}\r\nMessage-ID: <graceful${i}@sender.example>\r\n\r\n`);
      return { c, i };
    }),
  );
  const stopping = s.t.running.stop();
  // While those sessions are still open, a new client is told to come back later.
  const late = await RawSmtp.open(s.t.smtpPort).then(
    async (c) => {
      const greeting = await c.read(5_000).catch(() => ({ code: 0 }));
      c.close();
      return greeting.code;
    },
    () => 'refused',
  );
  // The rest of each message arrives while the box is stopping.
  const replies = await Promise.all(
    sessions.map(async ({ c, i }) => {
      c.write(`line of message ${i}\r\n.\r\n`);
      const reply = await c.read(40_000).catch(() => ({ code: 0, text: 'closed', lines: [] }));
      c.close();
      return { i, code: reply.code };
    }),
  );
  await stopping;
  assert.is(late, 421, 'a new connection during the stop gets 421');
  const subjects = await readBox(s.t.env, column<string>("SELECT subject FROM emails WHERE direction = 'in'"));
  const stored = new Set(subjects.map((x) => Number(x.split(' ')[1])));
  for (const r of replies) {
    if (r.code === 250) assert.ok(stored.has(r.i), `message ${r.i} was acknowledged but is not stored`);
    else assert.ok(r.code === 0 || (r.code >= 400 && r.code < 500), `message ${r.i} got ${r.code}`);
  }
  assert.is(replies.filter((r) => r.code === 250).length, 20, `every message in DATA when the stop began finished: ${JSON.stringify(replies.map((r) => r.code))}`);
  await s.t.stop(); // the app stopped already: this removes its data directory and database
  await s.sink.close();
  await s.dns.close();
});

test.run();
