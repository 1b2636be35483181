// Guessing passwords and API keys in parallel (catalogue AUTH-12): attempts count from the moment they start,
// so 60 logins or 40 SMTP AUTHs sent at once are judged like the same number in a row; the per-account lock
// never shuts the owner out from a clean address; `mailwright user unlock` clears the counters.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpRequest } from 'node:http';
import { freePort, runCli, seedWorkspace, startTestApp, TEST_PASSWORD, type TestApp } from '../testkit/app.ts';
import { RawSmtp } from '../testkit/smtp-client.ts';

let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  t = await startTestApp({
    // The per-client SMTP connection limit would refuse 40 sessions from one address before AUTH: lifted so
    // that this file tests the AUTH throttle alone.
    env: { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_SMTP_MAX_CLIENTS_PER_IP: '100', MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0' },
  });
  owner = await seedWorkspace(t);
});
test.after(() => t.stop());

/** POST /auth/login from a given loopback address (all of 127.0.0.0/8 is this machine). */
function loginFrom(ip: string, email: string, password: string): Promise<{ status: number; code?: string }> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.api}/auth/login`,
      { method: 'POST', localAddress: ip, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, code: text ? JSON.parse(text).error?.code : undefined }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const tally = (results: Array<{ status: number }>) => {
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

test('60 wrong passwords sent at once: at most 10 are checked, the rest are 429', async () => {
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) => loginFrom('127.0.0.2', owner.email, `wrong guess ${i}`)));
  const counts = tally(results);
  assert.ok((counts[401] ?? 0) <= 10, `checked: ${JSON.stringify(counts)}`);
  assert.is((counts[401] ?? 0) + (counts[429] ?? 0), 60, JSON.stringify(counts));
  assert.ok(results.filter((r) => r.status === 429).every((r) => r.code === 'too_many_login_attempts'));
  assert.is((await loginFrom('127.0.0.2', owner.email, TEST_PASSWORD)).status, 429, 'the address stays refused, even with the right password');
});

test('the account lock never shuts the owner out: a clean address still gets in; attackers do not', async () => {
  // Failures against the account from several addresses, five each: under the per-address limit everywhere,
  // until the account's limit refuses an address that has failed.
  // Each address's five at once: every attempt past the account's third failure waits up to 2 s.
  let lockedAt: string | null = null;
  for (let host = 10; host < 20 && !lockedAt; host++) {
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => loginFrom(`127.0.0.${host}`, owner.email, `spread ${i}`)));
    assert.ok(results.every((r) => r.status === 401 || r.status === 429), JSON.stringify(results));
    if (results.some((r) => r.status === 429)) lockedAt = `127.0.0.${host}`;
  }
  assert.ok(lockedAt, 'the account locked');
  assert.is((await loginFrom(lockedAt!, owner.email, TEST_PASSWORD)).status, 429, 'an address that failed is refused on the locked account, right password or not');
  assert.is((await loginFrom('127.0.0.30', owner.email, TEST_PASSWORD)).status, 200, 'the owner, from an address without failures, logs in');
});

test('mailwright user unlock clears the counters of the account and of the addresses that failed on it', async () => {
  assert.is((await loginFrom('127.0.0.2', owner.email, TEST_PASSWORD)).status, 429);
  const unknown = await runCli(['user', 'unlock', 'nobody@nowhere.test'], t.env);
  assert.is(unknown.code, 1, unknown.stderr);
  assert.match(unknown.stderr, /no user/);
  const unlocked = await runCli(['user', 'unlock', owner.email.toUpperCase()], t.env);
  assert.is(unlocked.code, 0, unlocked.stderr);
  assert.match(unlocked.stdout, /cleared \d+ failed/);
  assert.is((await loginFrom('127.0.0.2', owner.email, TEST_PASSWORD)).status, 200);
  assert.is((await loginFrom('127.0.0.10', owner.email, TEST_PASSWORD)).status, 200);
});

/** A submission session past STARTTLS, ready for AUTH. */
async function readyForAuth(): Promise<RawSmtp> {
  const smtp = await RawSmtp.open(t.submissionPort!);
  await smtp.read();
  await smtp.command('EHLO guesser.test');
  assert.is((await smtp.command('STARTTLS')).code, 220);
  await smtp.startTls();
  await smtp.command('EHLO guesser.test');
  return smtp;
}

test('40 wrong API keys over SMTP AUTH at once: at most 10 are checked, the rest get 454', async () => {
  const sessions = await Promise.all(Array.from({ length: 40 }, readyForAuth));
  try {
    const plain = (password: string) => Buffer.from(`\0anything\0${password}`).toString('base64');
    const replies = await Promise.all(sessions.map((s, i) => s.command(`AUTH PLAIN ${plain(`re_${String(i).padStart(8, '0')}wrongwrongwrongwrong`)}`, 15_000)));
    const counts = tally(replies.map((r) => ({ status: r.code })));
    assert.ok((counts[535] ?? 0) <= 10, JSON.stringify(counts));
    assert.is((counts[535] ?? 0) + (counts[454] ?? 0), 40, JSON.stringify(counts));
  } finally {
    for (const s of sessions) s.close();
  }
});

test.run();
