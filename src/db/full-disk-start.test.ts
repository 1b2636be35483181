// Starting on a full disk (catalogue DUR-13): serve is killed with SIGKILL while it takes mail and sends, the
// disk then fills to its last page, and serve starts again. It must start and serve: SMTP 451 4.3.0, API writes
// 507 insufficient_storage with retry-after, /healthz 200, a reason logged once and no stack trace; and once
// the space is back it takes mail and sends again without a restart, having lost nothing it acknowledged. With the
// free-space margin on (the default), the same start answers 452 4.3.1 at MAIL and 507 before anything is written.
// The data directory is a small tmpfs (mount(8), so root): skipped with a message where it cannot be mounted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { request, runCli, sqliteOnly, startAppProcess, testEnv, type AppProcess, type Reply } from '../testkit/app.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { BOX, eventually } from '../testkit/outbound.ts';
import { RawSmtp, type SmtpReply } from '../testkit/smtp-client.ts';
import { mountSmallDisk } from '../testkit/full-disk.ts';
import { servingProcesses } from './serving.ts';

const disk = mountSmallDisk(24);
if ('skipped' in disk) console.log(`full-disk-start.test.ts skipped: ${disk.skipped}`);

const messageId = (i: number | string) => `full-${i}@sender.example`;
const raw = (i: number | string) =>
  `From: sender@sender.example\r\nTo: keep@full.example\r\nSubject: Message ${i}\r\nMessage-ID: <${messageId(i)}>\r\n\r\n${'Body text line.\r\n'.repeat(200)}.\r\n`;

/** One SMTP transaction; the reply that ended it (the final dot's, or the first refusal). */
async function deliver(port: number, to: string, i: number | string): Promise<SmtpReply> {
  const c = await RawSmtp.open(port);
  try {
    await c.read();
    await c.command('EHLO full.test');
    for (const line of ['MAIL FROM:<sender@sender.example>', `RCPT TO:<${to}>`]) {
      const reply = await c.command(line);
      if (reply.code !== 250) return reply;
    }
    const data = await c.command('DATA');
    if (data.code !== 354) return data;
    c.write(raw(i));
    return await c.read(30_000);
  } finally {
    c.close();
  }
}

if (!('skipped' in disk)) {
  let dns: DnsServer;
  let app: AppProcess | null = null;
  // Every wait below is bounded; past this, the file fails and the tmpfs is unmounted anyway.
  setTimeout(() => {
    console.error('full-disk-start.test.ts: timed out after 300 s');
    app?.child.kill('SIGKILL');
    disk.unmount();
    process.exit(1);
  }, 300_000).unref();

  // Made by the first test, used by the second: the box's environment, its inbox address and a send with its key.
  let env: Record<string, string> = {};
  let to = '';
  let send: (url: string, subject: string) => Promise<Reply> = () => Promise.reject(new Error('no key yet'));

  test.before(async () => {
    dns = await startDnsServer();
    dns.add(BOX, 'A', '127.0.0.1');
  });
  test.after(async () => {
    try {
      if (app) await app.stop('SIGKILL');
      await dns.close();
    } finally {
      disk.unmount();
    }
  });

  sqliteOnly(test)('kill -9 under load, the disk fills, serve starts: 451 and 507 until there is room, then mail and sends again', async () => {
    // The margin (min_free_space_mb) is off: the disk itself fills, as on a box whose margin was set too low.
    // Deliveries go to a port where nothing listens, so sent mail stays queued and the queue keeps writing.
    env = testEnv(disk.dir, { MAILWRIGHT_DNS_SERVERS: dns.address, MAILWRIGHT_LOG_LEVEL: 'info', MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_MIN_FREE_SPACE_MB: '0', MAILWRIGHT_MTA_PORT: '9', MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true', MAILWRIGHT_RETRY_SCHEDULE: '1s' });
    app = await startAppProcess(env);
    const key = (await runCli(['key', 'create', '--name', 'full'], env)).stdout.trim();
    send = (url, subject) => request(`${url}/api/v1/emails`, { key, body: { from: 'app@full.example', to: ['someone@dest.test'], subject, text: 'x'.repeat(2000) } });
    const api = `${app.url}/api/v1`;
    const domain = (await request(`${api}/domains`, { body: { name: 'full.example' }, key })).body;
    dns.publish(domain.records);
    assert.is((await request(`${api}/domains/${domain.id}/verify`, { method: 'POST', key })).body.status, 'verified');
    await request(`${api}/domains/${domain.id}/inbound/setup`, { method: 'POST', key });
    dns.set('full.example', 'MX', [{ preference: 10, exchange: BOX }]);
    assert.is((await request(`${api}/domains/${domain.id}/inbound/verify`, { method: 'POST', key })).body.status, 'ready');
    to = (await request(`${api}/inboxes`, { body: { domain_id: domain.id, local_part: 'keep' }, key })).body.address;
    dns.set('dest.test', 'MX', [{ preference: 10, exchange: 'mx.dest.test' }]);
    dns.set('mx.dest.test', 'A', ['127.0.0.2']);

    // Load: four SMTP sessions and four API senders, until the process is killed under them.
    const acked = new Set<number | string>();
    const sent = new Set<string>();
    let killed: Promise<number | null> | null = null;
    const running = app;
    const kill = () => (killed ??= running.stop('SIGKILL'));
    const deadline = setTimeout(kill, 60_000); // a slow machine: killed with what it took by then
    let next = 0;
    const smtpLoad = Array.from({ length: 4 }, async () => {
      while (!killed) {
        const i = next++;
        try {
          if ((await deliver(running.smtpPort, to, i)).code === 250) acked.add(i);
        } catch {
          return; // the server went away
        }
        if (acked.size >= 10) kill();
      }
    });
    const apiLoad = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !killed; i++) {
        try {
          const r = await send(running.url, `load ${w}-${i}`);
          if (r.status === 200) sent.add(r.body.id);
        } catch {
          return;
        }
      }
    });
    await Promise.all([...smtpLoad, ...apiLoad]);
    clearTimeout(deadline);
    assert.is(await killed, null, 'killed by the signal');
    app = null;
    assert.ok(acked.size > 0 && sent.size > 0, `killed under load (${acked.size} received, ${sent.size} sent)`);

    // The page the dead serve's marker held is taken too: on ext4 what its removal frees stays in the blocks
    // reserved for root, where serve (not root) cannot write.
    for (const name of readdirSync(join(disk.dir, 'run'))) rmSync(join(disk.dir, 'run', name));
    assert.ok(disk.fill() > 0, 'the tmpfs had room to fill');
    // Another host name makes the self-signed certificate due again, as its expiry would: it cannot be kept.
    app = await startAppProcess({ ...env, MAILWRIGHT_HOSTNAME: 'mx2.mailwright.test' }, 60_000);
    const url = app.url;
    const port = app.smtpPort;
    assert.equal(servingProcesses(disk.dir).length, 1, 'restore can tell that serve runs');
    const startLog = app.output();
    const certificate = startLog.split('\n').find((l) => l.includes('could not keep the new self-signed TLS certificate'));
    assert.ok(certificate, startLog);
    assert.equal([JSON.parse(certificate).path, JSON.parse(certificate).reason.split(':')[0]], [join(disk.dir, 'tls', 'self-signed.crt'), 'ENOSPC']);

    // SQLite first fills the room its WAL file already has: mail is taken until a commit needs more, then refused.
    let smtp = await deliver(port, to, 'full-0');
    for (let i = 1; smtp.code === 250 && i < 400; i++) {
      acked.add(`full-${i - 1}`);
      smtp = await deliver(port, to, `full-${i}`);
    }
    assert.is(smtp.code, 451, smtp.text);
    assert.match(smtp.text, /^4\.3\.0 /);
    let refused = await send(url, 'while full');
    for (let i = 0; refused.status === 200 && i < 400; i++) {
      sent.add(refused.body.id);
      refused = await send(url, 'while full');
    }
    assert.is(refused.status, 507, JSON.stringify(refused.body));
    assert.equal(refused.body, { error: { message: refused.body.error.message, status: 507, code: 'insufficient_storage' } });
    assert.is(refused.headers.get('retry-after'), '60');
    // Both refuse together now, and /healthz answers as on any full disk.
    const alsoRefused = await deliver(port, to, 'while-full');
    assert.is(alsoRefused.code, 451, alsoRefused.text);
    assert.is((await send(url, 'while full')).status, 507);
    assert.is((await request(`${url}/healthz`)).status, 200, 'a full disk is not a damaged database');

    // A few seconds of the box's own jobs on the full disk (the queue, the reclaiming of free pages): each says
    // why and backs off; none prints a stack trace or calls it damage.
    await new Promise((r) => setTimeout(r, 5000));
    const fullLog = app.output().slice(startLog.length);
    const said = fullLog.split('\n').filter((l) => /"level":"(warn|error|fatal)"/.test(l)).map((l) => JSON.parse(l) as { level: string; msg: string });
    const times = new Map<string, number>();
    for (const { msg } of said) times.set(msg, (times.get(msg) ?? 0) + 1);
    // Each refused request or message is one line; the box's own jobs say it once however often they try.
    for (const perRequest of ['request refused: the disk is full', 'receiving a message failed: the disk is full']) times.delete(perRequest);
    assert.ok([...times.values()].every((n) => n === 1), JSON.stringify([...times]));
    assert.equal(fullLog.split('\n').filter((l) => /(\\n|^)\s+at /.test(l)), [], 'no stack trace');
    assert.not.ok(said.some((l) => l.level !== 'warn'), 'a full disk is a warning, not an error');
    assert.not.match(fullLog, /damaged/);

    disk.free();
    await eventually(async () => (await send(url, 'after')).status === 200, 20_000, 'a send accepted once there is room');
    await eventually(async () => (await deliver(port, to, 'after')).code === 250, 20_000, 'mail accepted once there is room');
    assert.is(await app.stop(), 0);
    app = null;

    const db = new Database(join(disk.dir, 'mailwright.db'), { readonly: true });
    try {
      const stored = new Set(db.prepare("SELECT message_id FROM emails WHERE direction = 'in'").pluck().all() as string[]);
      assert.equal([...acked].filter((i) => !stored.has(messageId(i))), [], 'no acknowledged message lost');
      assert.ok(stored.has(messageId('after')));
      assert.not.ok(stored.has(messageId('while-full')), 'what was refused is not stored');
      const out = new Set(db.prepare("SELECT id FROM emails WHERE direction = 'out'").pluck().all() as string[]);
      assert.equal([...sent].filter((id) => !out.has(id)), [], 'no acknowledged send lost');
      assert.is(db.pragma('quick_check', { simple: true }), 'ok');
    } finally {
      db.close();
    }
  });

  sqliteOnly(test)('with the free-space margin on, as by default: 452 4.3.1 at MAIL and 507 from the start, until there is room', async () => {
    const margined = { ...env, MAILWRIGHT_MIN_FREE_SPACE_MB: '2' };
    app = await startAppProcess(margined);
    const inFlight = Promise.all([send(app.url, 'in flight'), deliver(app.smtpPort, to, 'in-flight')]).catch(() => null);
    await app.stop('SIGKILL');
    await inFlight;
    app = null;
    for (const name of readdirSync(join(disk.dir, 'run'))) rmSync(join(disk.dir, 'run', name));
    assert.ok(disk.fill() > 0);

    app = await startAppProcess(margined, 60_000);
    const url = app.url;
    const port = app.smtpPort;
    const mail = await deliver(port, to, 'margin');
    assert.is(mail.code, 452, mail.text);
    assert.match(mail.text, /^4\.3\.1 /);
    const refused = await send(url, 'margin');
    assert.equal([refused.status, refused.body.error.code, refused.headers.get('retry-after')], [507, 'insufficient_storage', '60']);
    assert.match(app.output(), /"msg":"free space under the data directory is below min_free_space_mb/);
    // A new data directory, unlike one whose schema is in place, cannot wait for room: the command says why and where.
    const fresh = join(disk.dir, 'fresh');
    const created = await runCli(['workspace', 'create', 'fresh'], { ...margined, MAILWRIGHT_DATA_DIR: fresh });
    assert.is(created.code, 1, created.stdout);
    assert.ok(created.stderr.includes(`mailwright: cannot set up the database ${join(fresh, 'mailwright.db')}: the disk under ${fresh} is full (SQLITE_FULL: `), created.stderr);

    disk.free();
    // The margin is looked at every 5 seconds.
    await eventually(async () => (await send(url, 'after margin')).status === 200, 20_000, 'a send accepted once there is room');
    await eventually(async () => (await deliver(port, to, 'after-margin')).code === 250, 20_000, 'mail accepted once there is room');
    assert.is(await app.stop(), 0);
    app = null;
  });
}

test.run();
