// `mailwright try` as a newcomer runs it: a real process on free ports, the swaks and curl lines it prints run
// as printed, mail received by the inbox and kept in the local outbox with no MX lookup, the same box again at
// the next start, and the refusals that keep try and a real box apart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CLI, ROOT, freePort, request, runCli, sessionCookie, sqliteOnly, tempDir, testEnv } from '../testkit/app.ts';
import { startDnsServer, type DnsServer } from '../testkit/dns-server.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';
import { eventually } from '../testkit/outbound.ts';
import { openBrowser } from '../testkit/browser.ts';
import { TRY_MARKER } from '../db/try-marker.ts';

// try keeps its box in a data directory of its own, always SQLite (it takes no database_url): its tests run once,
// on SQLite, whichever store the suite runs on.
const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;
const root = tempDir('mailwright-try-test-');
let dns: DnsServer;

test.before(async () => {
  dns = await startDnsServer();
});
test.after(async () => {
  await dns.close();
  rmSync(root, { recursive: true, force: true });
});

interface TryProcess {
  child: ChildProcess;
  output: () => string;
  /** The welcome's "  Name   value" lines. */
  shown: Record<string, string>;
  /** The command lines it printed under "Send the inbox a message" and "Send one through the API". */
  swaks: string;
  curl: string;
  stop(): Promise<number | null>;
}

/** Starts `mailwright try` and waits (60 s at most) for its welcome, the sign that it listens. */
function startTry(args: string[], env: Record<string, string> = {}): Promise<TryProcess> {
  const child = spawn(CLI, ['try', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', MAILWRIGHT_DNS_SERVERS: dns.address, ...env } });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`try printed no welcome in 60 s:\n${output}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (!output.includes('Ctrl-C stops')) return;
      clearTimeout(timer);
      const shown = Object.fromEntries([...output.matchAll(/^ {2}([A-Z][a-zA-Z ]*?) {2,}(\S.*)$/gm)].map((m) => [m[1], m[2]]));
      const lines = output.split('\n').map((l) => l.trim());
      resolve({ child, output: () => output, shown, swaks: lines.find((l) => l.startsWith('swaks '))!, curl: lines.find((l) => l.startsWith('curl '))!, stop: () => (child.kill('SIGINT'), exited) });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk) => (output += chunk));
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`try exited with ${code} before its welcome:\n${output}`));
    });
  });
}

const dir = join(root, 'box');
let ports: string[];
let first: { key: string; passphrase: string; inbox: string; dashboard: string; kept: string };

sqliteOnly(test)('try receives a message by swaks and keeps an outbound one in its outbox, with no MX lookup', async () => {
  ports = ['--http-port', String(await freePort()), '--smtp-port', String(await freePort()), '--submission-port', '0'];
  const box = await startTry(['--dir', dir, ...ports]);
  try {
    const { shown } = box;
    const api = `${shown.Dashboard.replace(/\/$/, '')}/api/v1`;
    const key = shown['API key'];
    assert.is(shown.Inbox, 'hello@mail.localhost');
    assert.is(shown['Sign in'], 'owner@mail.localhost');
    assert.match(key, /^re_[A-Za-z0-9_-]{32}$/);
    assert.ok(existsSync(join(dir, TRY_MARKER)), 'the data directory is marked as try\'s');

    // Receiving: the printed swaks line, run as printed (the raw client sends the same where swaks is missing).
    assert.match(box.swaks, new RegExp(`^swaks --server 127\\.0\\.0\\.1:${ports[3]} --to hello@mail\\.localhost --from you@example\\.test `));
    if (has('swaks')) {
      // A longer wait than swaks's 30 s: a loaded test machine's first analysis starts its threads.
      const sent = spawnSync('sh', ['-c', `${box.swaks} --timeout 150`], { encoding: 'utf8', timeout: 160_000 });
      assert.is(sent.status, 0, sent.stdout + sent.stderr);
      assert.match(sent.stdout, /<- {2}250 2\.0\.0 Ok: queued as em_/);
    } else {
      const smtp = await RawSmtp.open(Number(ports[3]));
      assert.is((await smtp.read(30_000)).code, 220);
      for (const [line, code] of [['EHLO laptop.test', 250], ['MAIL FROM:<you@example.test>', 250], ['RCPT TO:<hello@mail.localhost>', 250], ['DATA', 354]] as const) {
        assert.is((await smtp.command(line, 30_000)).code, code, line);
      }
      assert.is((await smtp.command('From: you@example.test\r\nTo: hello@mail.localhost\r\nSubject: Hello\r\n\r\nThis is a test mailing\r\n.', 150_000)).code, 250);
      smtp.close();
    }
    const received = await eventually(async () => (await request(`${api}/emails?direction=in`, { key })).body.data.find((e: any) => e.subject === 'Hello'), 30_000, 'the swaks message in the inbox');
    assert.is(received.status, 'received');
    assert.equal(received.to.map((t: any) => t.address), ['hello@mail.localhost']);
    assert.is(received.category, 'primary', received.classification);

    // Sending: the printed curl line, run as printed, to someone@example.com.
    assert.match(box.curl, /"to":"someone@example\.com"/);
    let answer: any;
    if (has('curl')) {
      const sent = spawnSync('sh', ['-c', `${box.curl} -s`], { encoding: 'utf8', timeout: 60_000 });
      assert.is(sent.status, 0, sent.stderr);
      answer = JSON.parse(sent.stdout);
    } else {
      answer = (await request(`${api}/emails`, { key, body: JSON.parse(/-d '(.*)'$/.exec(box.curl)![1]) })).body;
    }
    assert.match(answer.id, /^em_/);
    const events = await eventually(
      async () => {
        const list = (await request(`${api}/emails/${answer.id}/events`, { key })).body.data as any[];
        return list.some((e) => e.type === 'delivered') && list;
      },
      30_000,
      'the kept message\'s delivered event',
    );
    const delivered = events.find((e) => e.type === 'delivered');
    assert.is(delivered.recipient, 'someone@example.com');
    assert.is(delivered.data.mx, 'local outbox');
    assert.is(delivered.data.code, 250);
    assert.match(delivered.data.response, /Kept in the local outbox/);
    assert.is((await request(`${api}/emails/${answer.id}`, { key })).body.status, 'delivered');
    // What would have gone out: composed and DKIM-signed, kept whole.
    const raw = await request(`${api}/emails/${answer.id}/raw`, { key });
    assert.is(raw.status, 200);
    assert.match(String(raw.body), /DKIM-Signature: [^]*d=mail\.localhost/);
    assert.match(String(raw.body), /To: someone@example\.com/);
    const outbox = (await request(`${api}/emails?direction=out`, { key })).body.data as any[];
    assert.ok(outbox.some((e) => e.id === answer.id), 'the kept message is listed with the sent mail');

    // Mail to the local domain goes to the box's own inbox.
    const local = await request(`${api}/emails`, { key, body: { from: 'hello@mail.localhost', to: 'hello@mail.localhost', subject: 'To myself', text: 'Round trip' } });
    assert.is(local.status, 200, JSON.stringify(local.body));
    const back = await eventually(async () => (await request(`${api}/emails?direction=in`, { key })).body.data.find((e: any) => e.subject === 'To myself'), 30_000, 'the message to itself in the inbox');
    assert.equal(back.from.address, 'hello@mail.localhost');

    // Nothing was routed through DNS: not one MX question, nothing about example.com.
    assert.equal(dns.queries.filter((q) => q.type === 'MX' || q.name.endsWith('example.com')), []);

    // The owner signs in with what was printed; the dashboard and the API know it is try mode.
    const login = await request(`${api}/auth/login`, { body: { email: shown['Sign in'], password: shown.Passphrase } });
    assert.is(login.status, 200, JSON.stringify(login.body));
    const cookie = sessionCookie(login.headers)!;
    assert.is((await request(`${api}/profile`, { cookie })).body.tryMode, true);
    assert.is((await request(`${api}/account`, { key })).body.infrastructure.tryMode, true);
    const domain = (await request(`${api}/domains`, { key })).body.data.find((d: any) => d.name === 'mail.localhost');
    assert.equal([domain.status, domain.setup_status, domain.local], ['verified', 'complete', true]);
    const before = dns.queries.length;
    const verify = await request(`${api}/domains/${domain.id}/verify`, { key, body: {} });
    assert.equal([verify.status, verify.body.status, verify.body.records], [200, 'verified', []]);
    const inbound = await request(`${api}/domains/${domain.id}/inbound/verify`, { key, body: {} });
    assert.equal([inbound.status, inbound.body.status], [200, 'ready']);
    // try's own name (under .localhost) cannot be public, and a local domain needs it to be nothing more.
    const shownDomain = await request(`${api}/domains/${domain.id}`, { key });
    assert.equal([shownDomain.body.hostnameProblem, shownDomain.body.inbound.status], [null, 'ready']);
    assert.is(dns.queries.length, before, 'checking the local domain asks DNS nothing');

    first = { key, passphrase: shown.Passphrase, inbox: shown.Inbox, dashboard: shown.Dashboard, kept: answer.id };
  } finally {
    assert.is(await box.stop(), 0, 'Ctrl-C stops it cleanly');
  }
});

sqliteOnly(test)('try again: the same box and addresses, a new passphrase and key, the kept mail still there', async () => {
  const box = await startTry(['--dir', dir, ...ports]);
  try {
    const { shown } = box;
    assert.equal([shown.Dashboard, shown.Inbox], [first.dashboard, first.inbox]);
    assert.is.not(shown.Passphrase, first.passphrase);
    assert.is.not(shown['API key'], first.key);
    const api = `${shown.Dashboard.replace(/\/$/, '')}/api/v1`;
    assert.is((await request(`${api}/emails/${first.kept}`, { key: shown['API key'] })).body.status, 'delivered');
    assert.is((await request(`${api}/emails`, { key: first.key })).status, 401, 'the key of the run before is revoked');
    assert.is((await request(`${api}/auth/login`, { body: { email: shown['Sign in'], password: first.passphrase } })).status, 401);

    // The newcomer's browser: the printed link, the printed sign-in, the try-mode note and the kept mail in Sent.
    const browser = await openBrowser();
    try {
      const page = await browser.newPage();
      const errors: Error[] = [];
      page.on('pageerror', (err) => errors.push(err));
      await page.goto(shown.Dashboard);
      await page.fill('input[name=email]', shown['Sign in']);
      await page.fill('input[name=password]', shown.Passphrase);
      await page.press('input[name=password]', 'Enter');
      const note = page.getByRole('note', { name: 'Try mode' });
      await note.waitFor({ timeout: 30_000 });
      assert.match(await note.innerText(), /Mail to other domains is kept here, not sent/);
      await note.getByRole('link', { name: 'Sent' }).click();
      await page.getByText('Hello from Mailwright').first().waitFor({ timeout: 30_000 });
      assert.equal(errors, []);
    } finally {
      await browser.close();
    }
  } finally {
    assert.is(await box.stop(), 0);
  }
});

sqliteOnly(test)('serve refuses a try directory; try refuses a box\'s data directory and leaves it as it was', async () => {
  const served = await runCli(['serve'], testEnv(dir));
  assert.is(served.code, 78, served.stdout + served.stderr);
  assert.match(served.stderr, /was made by 'mailwright try'/);

  const real = join(root, 'real');
  mkdirSync(real, { mode: 0o700 });
  const made = await runCli(['key', 'create', '--name', 'mine'], testEnv(real));
  assert.is(made.code, 0, made.stderr);
  const files = readdirSync(real).sort();
  const refused = await runCli(['try', '--dir', real, ...ports], { MAILWRIGHT_DNS_SERVERS: dns.address });
  assert.is(refused.code, 78);
  assert.match(refused.stderr, /holds files that 'mailwright try' did not make/);
  assert.equal(readdirSync(real).sort(), files);
});

sqliteOnly(test)('try takes its ports as flags and says what is wrong with one', async () => {
  const bad = await runCli(['try', '--dir', join(root, 'unused'), '--http-port', '80x'], {});
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /--http-port must be a port from 1 to 65535, got "80x"/);
  assert.not.ok(existsSync(join(root, 'unused')));

  // Another program on the dashboard's port (Mailpit's is 8025 too): the flag to change is named.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const port = String((taken.address() as AddressInfo).port);
    const busy = await runCli(['try', '--dir', join(root, 'busy'), '--http-port', port, '--smtp-port', String(await freePort()), '--submission-port', '0'], { MAILWRIGHT_DNS_SERVERS: dns.address });
    assert.is(busy.code, 78, busy.stdout + busy.stderr);
    assert.match(busy.stderr, new RegExp(`cannot listen for HTTP on 127\\.0\\.0\\.1:${port}: the address is already in use by another program; stop it or give try another --http-port`));
  } finally {
    taken.close();
  }
});

test.run();
