// Signer: the worker pool gives back what sign(compose()) gives, for many jobs at once, on several threads;
// a failing job fails alone; close() ends everything. Signatures are checked by mailauth's verifier against
// the key published in the test DNS server. Then the pool's job budget, on a probe job module: a job past it
// fails and its worker is replaced, and the jobs beside it run again.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { dkimVerify } from 'mailauth';
import { simpleParser } from 'mailparser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dkimName, dkimValue } from '../dns/records.ts';
import { createResolver } from '../dns/resolver.ts';
import type { ComposeInput } from '../mail/compose.ts';
import type { DkimKey } from '../mail/sign.ts';
import { startDnsServer } from '../testkit/dns-server.ts';
import { JobTimeout, WorkerPool } from '../threads/worker-pool.ts';
import { Signer, type Signed } from './signer.ts';
import { unpackBodies, unpackMessage } from '../mail/packing.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const KEY: DkimKey = { domain: 'example.com', selector: 'pool1', privateKey };
const dns = await startDnsServer();
dns.add(dkimName(KEY), 'TXT', dkimValue(publicKey.toString('base64')));
const resolver = (name: string, type: string) => createResolver([dns.address]).resolve(name, type);

const signer = new Signer({ size: 2 });
test.after(async () => {
  await signer.close();
  await dns.close();
});

function input(i: number, over: Partial<ComposeInput> = {}): ComposeInput {
  return {
    messageId: `job-${i}@example.com`,
    date: Date.UTC(2024, 9, 1),
    from: { address: 'news@example.com' },
    to: [{ address: `rcpt${i}@example.net` }],
    cc: [],
    replyTo: [],
    subject: `Job ${i}`,
    text: `Body of job ${i}\n`.repeat(50),
    headers: { 'List-Unsubscribe': `<https://box.example.com/u/${i}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    attachments: [],
    ...over,
  };
}

async function verdict(signed: Buffer | Signed): Promise<string> {
  const { results } = await dkimVerify(Buffer.isBuffer(signed) ? signed : signed.raw, { resolver } as Parameters<typeof dkimVerify>[1]);
  return results.map((r) => r.status.result).join(',');
}

test('200 concurrent jobs: each comes back signed, verifies, and is its own message; both workers ran', async () => {
  const signed = await Promise.all(Array.from({ length: 200 }, (_, i) => signer.composeAndSign(input(i), KEY).then((s) => s.raw)));
  for (const [i, message] of signed.entries()) {
    assert.ok(Buffer.isBuffer(message), 'a Buffer');
    const text = message.toString('latin1');
    assert.match(text, `\r\nSubject: Job ${i}\r\n`);
    assert.match(text, `\r\nMessage-ID: <job-${i}@example.com>\r\n`);
  }
  const verdicts = await Promise.all(signed.map(verdict));
  assert.equal(verdicts, Array(200).fill('pass'));
  const stats = signer.stats();
  assert.is(stats.length, 2, JSON.stringify(stats));
  assert.ok(stats.every((w) => w.done > 0 && w.inFlight === 0), JSON.stringify(stats));
  assert.is(new Set(stats.map((w) => w.threadId)).size, 2);
  assert.is(stats.reduce((n, w) => n + w.done, 0), 200);
});

test('the signing threads run at the lowest priority (nice 19), the rest of the process at its own', async () => {
  await signer.composeAndSign(input(0), KEY);
  // /proc/<pid>/task/<tid>/stat: nice is the 19th field; the 2nd, the name, is in parentheses and may hold spaces.
  const nice = (tid: string) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
  const tasks = readdirSync('/proc/self/task').map((tid) => ({ name: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(), nice: nice(tid) }));
  const sign = tasks.filter((t) => t.name === 'mw-sign');
  assert.ok(sign.length >= 1, JSON.stringify(tasks));
  assert.equal(sign.map((t) => t.nice), sign.map(() => 19));
  assert.is(nice(String(process.pid)), 0, 'the event loop keeps its priority');
});

test('attachments cross the thread boundary intact, and the caller keeps its buffers', async () => {
  const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
  const copy = Buffer.from(bytes);
  const signed = (await signer.composeAndSign(input(1, { attachments: [{ filename: 'data.bin', content: bytes, contentType: 'application/octet-stream' }] }), KEY)).raw;
  assert.ok(bytes.equals(copy), 'the input buffer is not detached or changed');
  const parsed = await simpleParser(signed);
  assert.is(parsed.attachments.length, 1);
  assert.ok(parsed.attachments[0]!.content.equals(copy), 'attachment bytes');
  assert.is(await verdict(signed), 'pass');
});

test('the worker packs the signed copy against the bodies (and the bodies when asked): it unpacks to the signed bytes, and is smaller', async () => {
  const html = `<p>${'Body of the HTML part, which repeats the text. '.repeat(40)}</p>`;
  const given = input(5, { html });
  const alone = await signer.composeAndSign(given, KEY);
  assert.is(alone.bodies, null, 'bodies only when asked');
  const signed = await signer.composeAndSign(given, KEY, undefined, { packBodies: true });
  assert.ok(signed.bodies && Buffer.isBuffer(signed.bodies.text) && Buffer.isBuffer(signed.bodies.html), 'both bodies packed');
  assert.equal(unpackBodies(signed.bodies!), { text: given.text!, html }, 'the bodies unpack to the input');
  // Against the bodies as stored, packed or not: the email's bodies are stored as strings until then.
  assert.ok(unpackMessage(signed.packed, signed.bodies!).equals(signed.raw), 'against the packed bodies');
  assert.ok(unpackMessage(alone.packed, { text: given.text!, html }).equals(alone.raw), 'against the bodies as strings');
  assert.ok(signed.packed.length * 4 < signed.raw.length, `${signed.packed.length} packed bytes for ${signed.raw.length}`);
  assert.throws(() => unpackMessage(signed.packed, { text: 'other text', html }), 'other bodies never give other bytes');
  assert.is(await verdict(signed), 'pass');
});

test('a bad key rejects that job with SignError; the pool keeps its workers and the next job signs', async () => {
  const before = signer.stats().map((w) => w.threadId).sort();
  try {
    await signer.composeAndSign(input(1), { ...KEY, privateKey: 'not a key' });
    assert.unreachable('signed with a bad key');
  } catch (err) {
    assert.instance(err, Error);
    assert.is((err as Error).name, 'SignError');
    assert.match((err as Error).message, 'DKIM signing with pool1._domainkey.example.com failed');
  }
  const signed = await signer.composeAndSign(input(2), KEY);
  assert.is(await verdict(signed), 'pass');
  assert.equal(signer.stats().map((w) => w.threadId).sort(), before);
});

test('a ComposeError in the worker keeps its name and message', async () => {
  try {
    await signer.composeAndSign(input(1, { subject: 'hi\r\nBcc: victim@example.net' }), KEY);
    assert.unreachable('composed a header injection');
  } catch (err) {
    assert.instance(err, Error);
    assert.is((err as Error).name, 'ComposeError');
    assert.is((err as Error).message, 'subject: contains CR, LF or NUL');
  }
  assert.is(await verdict(await signer.composeAndSign(input(3), KEY)), 'pass');
});

test('input that cannot cross to a worker rejects that job only', async () => {
  const bad = { ...input(1), headers: { 'X-Fn': (() => 'x') as unknown as string } };
  try {
    await signer.composeAndSign(bad, KEY);
    assert.unreachable('a function was posted to a worker');
  } catch (err) {
    assert.instance(err, Error);
    assert.match((err as Error).message, /could not be cloned/);
  }
  assert.ok(signer.stats().every((w) => w.inFlight === 0), 'nothing left in flight');
  assert.is(await verdict(await signer.composeAndSign(input(4), KEY)), 'pass');
});

test('a worker that dies rejects its jobs with the reason, and a new worker takes over', async () => {
  const pool = new Signer({ size: 1 });
  try {
    assert.is(await verdict(await pool.composeAndSign(input(1), KEY)), 'pass');
    const [first] = pool.stats();
    // Reach the private worker only to kill it: there is no public way to make a thread die.
    const slots = (pool as unknown as { slots: Set<{ worker: Worker }> }).slots;
    const jobs = Promise.allSettled([pool.composeAndSign(input(2), KEY), pool.composeAndSign(input(3), KEY)]);
    await [...slots][0]!.worker.terminate();
    for (const outcome of await jobs) {
      assert.is(outcome.status, 'rejected', 'a job outlived its worker');
      assert.match(String((outcome as PromiseRejectedResult).reason), /sign worker exited with code/);
    }
    assert.is(await verdict(await pool.composeAndSign(input(4), KEY)), 'pass');
    const stats = pool.stats();
    assert.is(stats.length, 1);
    assert.is.not(stats[0]!.threadId, first!.threadId);
  } finally {
    await pool.close();
  }
});

test('a worker holds at most two jobs; the rest wait, and a job given as a function is made only when a worker takes it', async () => {
  const pool = new Signer({ size: 1 });
  try {
    let made = 0;
    const jobs = Array.from({ length: 6 }, (_, i) =>
      pool.composeAndSign(async () => {
        made++;
        return input(i);
      }, KEY),
    );
    assert.is(made, 2, 'only what the worker took was made');
    assert.is(pool.queued, 4);
    const signed = await Promise.all(jobs);
    assert.is(made, 6);
    assert.equal(await Promise.all(signed.map(verdict)), Array(6).fill('pass'));
    signed.forEach((message, i) => assert.match(message.raw.toString('latin1'), `\r\nSubject: Job ${i}\r\n`));
  } finally {
    await pool.close();
  }
});

test('close() rejects the jobs in flight, then every call', async () => {
  const pool = new Signer({ size: 2 });
  const jobs = Promise.allSettled(Array.from({ length: 5 }, (_, i) => pool.composeAndSign(input(i), KEY)));
  await pool.close();
  const outcomes = await jobs;
  assert.is(outcomes.length, 5);
  for (const outcome of outcomes) {
    assert.is(outcome.status, 'rejected');
    assert.match(String((outcome as PromiseRejectedResult).reason), /closed/);
  }
  await pool.composeAndSign(input(9), KEY).then(
    () => assert.unreachable('a closed pool signed'),
    (err: Error) => assert.match(err.message, /closed/),
  );
  assert.equal(pool.stats(), []);
});

test('after close() a process that used the pool exits by itself', async () => {
  const script = `
    import { generateKeyPairSync } from 'node:crypto';
    import { Signer } from ${JSON.stringify(new URL('./signer.ts', import.meta.url).href)};
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'der' } });
    const signer = new Signer({ size: 2 });
    const input = { messageId: 'a@example.com', date: 0, from: { address: 'a@example.com' }, to: [{ address: 'b@example.net' }], cc: [], replyTo: [], subject: 's', text: 't', headers: {}, attachments: [] };
    const out = await Promise.all([1, 2, 3, 4].map(() => signer.composeAndSign(input, { domain: 'example.com', selector: 's', privateKey })));
    console.log('signed', out.length, 'workers', signer.stats().length);
    await signer.close();
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  assert.is(code, 0, `the child did not exit by itself:\n${output}`);
  assert.match(output, 'signed 4 workers 2');
});

// The pool's job budget (worker-pool.ts), with a job module of its own: a job can spin (blocking its worker's
// event loop, as a pathological message would), sleep, fail with a code, or end its thread.
interface ProbeJob {
  echo?: number;
  spin?: number;
  sleep?: number;
  fail?: string;
  exit?: number;
  bytes?: Uint8Array;
}
interface ProbeResult {
  echo?: number;
  thread: number;
}
const PROBE = new URL(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { threadId } from 'node:worker_threads';
      import { serveJobs } from ${JSON.stringify(new URL('../threads/worker-pool.ts', import.meta.url).href)};
      serveJobs(async (job) => {
        if (job.sleep) await new Promise((resolve) => setTimeout(resolve, job.sleep));
        if (job.spin) for (const end = Date.now() + job.spin; Date.now() < end; );
        if (job.exit) process.exit(job.exit);
        if (job.fail) throw Object.assign(new Error(job.fail), { name: 'StoreError', code: 'SQLITE_FULL' });
        return { result: { echo: job.echo, thread: threadId } };
      });`),
);
const probePool = (opts: { jobsPerWorker?: number; jobTimeoutMs?: number } = {}) => new WorkerPool<ProbeJob, ProbeResult>({ name: 'probe', module: PROBE, size: 1, ...opts });
function reason(outcome: PromiseSettledResult<unknown>): Error {
  if (outcome.status === 'rejected') return outcome.reason as Error;
  throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
}

test('a job past its budget fails with JobTimeout; its worker is replaced and the jobs beside it run again alone', async () => {
  const pool = probePool({ jobsPerWorker: 4, jobTimeoutMs: 400 });
  try {
    const { thread: first } = await pool.run({ echo: 0 });
    const [stuck, ...innocent] = await Promise.allSettled([pool.run({ spin: 60_000 }), pool.run({ echo: 1 }), pool.run({ echo: 2 }), pool.run({ echo: 3 })]);
    assert.instance(reason(stuck), JobTimeout);
    assert.is(reason(stuck).name, 'JobTimeout');
    assert.match(reason(stuck).message, 'probe job ran past its 400 ms budget');
    assert.equal(
      innocent.map((o) => (o.status === 'fulfilled' ? o.value.echo : String(o.reason))),
      [1, 2, 3],
      'the jobs stuck behind it were answered',
    );
    for (const o of innocent) assert.is.not((o as PromiseFulfilledResult<ProbeResult>).value.thread, first, 'by a new worker');
    const later = await pool.run({ echo: 4 });
    assert.is.not(later.thread, first);
    assert.equal(pool.stats().filter((w) => w.lane === 'shared').map((w) => w.threadId), [later.thread], 'one shared worker, the replacement');
  } finally {
    await pool.close();
  }
});

test('a job whose data was transferred to the stopped worker fails; one made by a function is made again', async () => {
  const pool = probePool({ jobsPerWorker: 4, jobTimeoutMs: 400 });
  try {
    let made = 0;
    const moved = new Uint8Array(8);
    const outcomes = await Promise.allSettled([
      pool.run({ spin: 60_000 }),
      pool.run({ echo: 1, bytes: moved }, [moved.buffer]),
      pool.runFrom(() => {
        made++;
        const bytes = new Uint8Array(8);
        return { job: { echo: 2, bytes }, transfer: [bytes.buffer] };
      }),
    ]);
    assert.is(reason(outcomes[0]).name, 'JobTimeout');
    assert.match(reason(outcomes[1]).message, 'probe worker was stopped: another of its jobs ran past the 400 ms budget');
    assert.is((outcomes[2] as PromiseFulfilledResult<ProbeResult>).value.echo, 2);
    assert.is(made, 2, 'made once for each worker');
  } finally {
    await pool.close();
  }
});

test('jobs that shared a stopped worker run again one at a time: each spinner fails alone, the echo is answered', async () => {
  const pool = probePool({ jobsPerWorker: 5, jobTimeoutMs: 300 });
  try {
    const outcomes = await Promise.allSettled([1, 2, 3, 4].map(() => pool.run({ spin: 60_000 })).concat(pool.run({ echo: 1 })));
    for (const o of outcomes.slice(0, 4)) assert.match(reason(o).message, 'probe job ran past its 300 ms budget');
    assert.is((outcomes[4] as PromiseFulfilledResult<ProbeResult>).value.echo, 1);
    assert.is((await pool.run({ echo: 2 })).echo, 2);
  } finally {
    await pool.close();
  }
});

test('the budget runs from when the worker has loaded its module, and a job within it is answered', async () => {
  const pool = probePool({ jobTimeoutMs: 1000 });
  try {
    assert.is((await pool.run({ sleep: 300, echo: 1 })).echo, 1);
    assert.is((await pool.run({ sleep: 300, echo: 2 })).echo, 2);
  } finally {
    await pool.close();
  }
});

test('with a budget, a worker that dies fails only the job that killed it; the jobs beside it run again alone', async () => {
  const pool = probePool({ jobsPerWorker: 3, jobTimeoutMs: 5000 });
  try {
    const { thread: first } = await pool.run({ echo: 0 });
    const outcomes = await Promise.allSettled([pool.run({ sleep: 100, exit: 3 }), pool.run({ sleep: 2000, echo: 1 }), pool.run({ sleep: 2000, echo: 2 })]);
    assert.match(reason(outcomes[0]).message, 'probe worker exited with code 3');
    assert.equal(outcomes.slice(1).map((o) => (o as PromiseFulfilledResult<ProbeResult>).value.echo), [1, 2]);
    const next = await pool.run({ echo: 3 });
    assert.is.not(next.thread, first, 'a new worker serves the next job');
  } finally {
    await pool.close();
  }
});

test("an error's string code crosses the thread boundary with its name and message", async () => {
  const pool = probePool();
  try {
    const [outcome] = await Promise.allSettled([pool.run({ fail: 'database or disk is full' })]);
    const err: Error & { code?: string } = reason(outcome);
    assert.is(err.name, 'StoreError');
    assert.is(err.message, 'database or disk is full');
    assert.is(err.code, 'SQLITE_FULL');
  } finally {
    await pool.close();
  }
});

test.run();
