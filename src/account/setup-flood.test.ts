// Floods at the password hash (catalogue AUTH-13): setup checks that the box has no owner and that the token
// is the live one before it hashes anything, and every hash of the box waits in one short queue that serves
// clean addresses before guessing ones. Hashes are counted at /metrics (mailwright_password_hashes_total).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request, runCli, startTestApp, type TestApp } from '../testkit/app.ts';
import { run, value } from '../db/query.ts';

const OWNER = { email: 'owner@box.example', password: 'orbit lantern quietly 42' };
let t: TestApp;
let token: string;

test.before(async () => {
  // The default rate limit stays on: the floods below keep within it per address, as a patient attacker would.
  t = await startTestApp();
  token = /\/setup#([A-Za-z0-9_-]+)/.exec((await runCli(['setup', 'link'], t.env)).stdout)![1]!;
});
test.after(() => t.stop());

interface Answer {
  status: number;
  code: string | null;
}

/** POST `body` as JSON from `ip` on a connection of its own; status 0 if no answer came within `timeoutMs`. */
function post(path: string, ip: string, body: unknown, timeoutMs = 30_000): { done: Promise<Answer>; req: ClientRequest } {
  const text = JSON.stringify(body);
  let req!: ClientRequest;
  const done = new Promise<Answer>((resolve) => {
    req = httpRequest(
      `${t.api}${path}`,
      { method: 'POST', agent: false, localAddress: ip, timeout: timeoutMs, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } },
      (res) => {
        let out = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (out += d));
        res.on('end', () => resolve({ status: res.statusCode!, code: out ? (JSON.parse(out).error?.code ?? null) : null }));
        res.on('error', () => resolve({ status: 0, code: 'error' }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, code: err.message }));
    req.end(text);
  });
  return { done, req };
}

/** Password hashes the box has computed so far, and sign-ins waiting for one, as /metrics shows them. */
async function hashQueue(): Promise<{ computed: number; waiting: number }> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)![1]);
  return { computed: value(/^mailwright_password_hashes_total\{outcome="computed"\} (\d+)$/m), waiting: value(/^mailwright_password_hash_queue\{state="waiting"\} (\d+)$/m) };
}
const hashesComputed = async () => (await hashQueue()).computed;

const tally = (answers: Answer[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[`${a.status} ${a.code}`] = (counts[`${a.status} ${a.code}`] ?? 0) + 1;
  return JSON.stringify(counts);
};

test('first start: a wrong token or a weak passphrase costs no hash; six setups at once with the live token make one owner; the token is then refused', async () => {
  const before = await hashesComputed();
  const wrong = await post('/setup', '127.0.0.2', { token: 'made-up-token', ...OWNER }).done;
  assert.equal([wrong.status, wrong.code], [403, 'invalid_setup_token']);
  const weak = await post('/setup', '127.0.0.2', { token, email: OWNER.email, password: 'aaaaaaaaaaaaaaaa' }).done;
  assert.equal([weak.status, weak.code], [400, 'validation_error']);
  assert.is(await hashesComputed(), before, 'no hash for either');

  // All six pass the token check and hash; only the first to commit takes the token.
  const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => post('/setup', `127.0.0.${3 + i}`, { token, ...OWNER }).done));
  assert.is(racing.filter((a) => a.status === 201).length, 1, tally(racing));
  assert.ok(racing.every((a) => a.status === 201 || a.code === 'invalid_setup_token'), tally(racing));
  assert.is(await t.app.store.read(value<number>('SELECT count(*) FROM users')), 1, 'one owner');

  const counted = await hashesComputed();
  const again = await post('/setup', '127.0.0.2', { token, email: 'thief@evil.example', password: 'another long passphrase' }).done;
  assert.equal([again.status, again.code], [403, 'invalid_setup_token']);
  assert.equal((await request(`${t.api}/setup`)).body, { needed: false });
  assert.is(await hashesComputed(), counted, 'the used token costs no hash');
  assert.is((await post('/auth/login', '127.0.0.2', OWNER).done).status, 200);
});

test('a setup flood after the owner exists (40 a second from four addresses) while the owner signs in: every sign-in 200, the flood 403, no hash for it', async () => {
  const before = await hashesComputed();
  const flood: Array<Promise<Answer>> = [];
  let sent = 0;
  const ticker = setInterval(() => {
    sent++;
    flood.push(post('/setup', `127.0.1.${1 + (sent % 4)}`, { token: `made-up-${sent}`, email: `thief${sent}@evil.example`, password: 'a long and strong passphrase' }).done);
  }, 25);
  const until = Date.now() + 5_000;
  const logins: Answer[] = [];
  try {
    // Each sign-in has 15 s (a hash takes about 0.4 s on a quiet machine): an answer, not a measurement.
    while (Date.now() < until) logins.push(await post('/auth/login', '127.0.0.20', OWNER, 15_000).done);
  } finally {
    clearInterval(ticker);
  }
  const answers = await Promise.all(flood);
  assert.ok(logins.length >= 2 && logins.every((a) => a.status === 200), `owner: ${tally(logins)}`);
  assert.ok(answers.length >= 100, `flood sent: ${answers.length}`);
  assert.ok(answers.every((a) => a.status === 403 && a.code === 'invalid_setup_token'), tally(answers));
  assert.is(await hashesComputed(), before + logins.length, 'hashes: the owner\'s sign-ins only');
});

test('a guessing flood from addresses that failed waits behind the owner, and hashes of guessers that leave are not made', async () => {
  const guessers = Array.from({ length: 20 }, (_, i) => `127.0.2.${i + 1}`);
  const guess = (ip: string, n: number) => post('/auth/login', ip, { email: `made-up-${n}@nowhere.test`, password: `guess number ${n}` });
  // One failure each, as one wrong password would leave it (made directly: twenty hashes take long on a busy machine).
  const insert = (ip: string) => run("INSERT INTO auth_failures (scope, ip, account, at) VALUES ('login', ?, ?, ?)", ip, `made-up-${ip}@nowhere.test`, t.app.clock.now());
  await t.app.store.write(function* () {
    for (const ip of guessers) yield* insert(ip);
  });

  // Two guesses in flight from each address, each answer followed by the next (after a pause if turned away).
  const answers: Answer[] = [];
  const inFlight = new Set<ClientRequest>();
  let stop = false;
  let n = 100;
  const keepGuessing = async (ip: string) => {
    while (!stop) {
      const { done, req } = guess(ip, n++);
      inFlight.add(req);
      const answer = await done;
      inFlight.delete(req);
      if (stop) return;
      answers.push(answer);
      if (answer.status === 429 && answer.code === 'too_many_login_attempts') return;
      if (answer.status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const flood = Promise.all(guessers.flatMap((ip) => [keepGuessing(ip), keepGuessing(ip)]));
  try {
    // The queue is full once one guess is turned away.
    for (let waited = 0; !answers.some((a) => a.code === 'server_busy'); waited += 50) {
      assert.ok(waited < 30_000, `the queue never filled: ${tally(answers)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (let i = 0; i < 3; i++) {
      const checkedBefore = answers.filter((a) => a.status === 401).length;
      // 30 s: an answer, not a measurement (a hash took 1.6 s on the loaded machine this was written on).
      const login = await post('/auth/login', '127.0.0.30', OWNER, 30_000).done;
      const checkedMeanwhile = answers.filter((a) => a.status === 401).length - checkedBefore;
      assert.equal([login.status, login.code], [200, null], `sign-in ${i + 1}`);
      // First in line, the owner waits for the hashes already running, not for the 16 guesses queued before it.
      assert.ok(checkedMeanwhile <= 8, `sign-in ${i + 1}: ${checkedMeanwhile} guesses were checked while the owner waited`);
    }
  } finally {
    stop = true;
  }
  const left = await hashQueue();
  assert.ok(left.waiting >= 8, `guesses waiting when the guessers left: ${left.waiting}`);
  for (const req of inFlight) req.destroy();
  await flood;
  // Status 0: a guesser that gave up waiting (30 s) on a slow machine; every answer that came is one of these.
  assert.ok(answers.every((a) => a.status === 0 || a.status === 401 || (a.status === 503 && a.code === 'server_busy') || a.status === 429), tally(answers));
  assert.ok(answers.some((a) => a.status === 401), 'guesses were being checked all along');

  // The guesses still queued when their clients left are dropped, not hashed: the queue empties while the
  // hashes already running (two) finish, and the few that started in the moment before the server heard the
  // clients leave, where working through it would take a hash per waiter (8 or more).
  for (let waited = 0; ; waited += 100) {
    const { computed, waiting } = await hashQueue();
    assert.ok(computed - left.computed <= 6, `${computed - left.computed} hashes made after the guessers left, ${waiting} still waiting`);
    if (waiting === 0) break;
    assert.ok(waited < 30_000, `still ${waiting} waiting`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

test.run();
