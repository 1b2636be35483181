// Catalogue RES-16 against a real serve process: 60 parallel 9.9 MB uploads with a valid key. The process's
// resident memory, read from /proc, stays within a bound set by upload_memory_mb over a baseline measured here;
// each upload is stored (201) or refused unread (429 `uploads_busy` with retry-after), never a 5xx; a stored
// file comes back byte for byte; and once the flood is over an upload succeeds again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request, runCli, startAppProcess, tempDir, testEnv, type AppProcess } from '../testkit/app.ts';

const MiB = 1024 * 1024;
const BUDGET_MB = 64;
const UPLOADS = 60;
const FILE = Buffer.alloc(9_900_000);
for (let i = 0; i < FILE.length; i += 997) FILE[i] = (i * 7) % 251;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** The socket's error when no answer came back at all. */
  error?: string;
}

/** A POST over its own connection; the answer is kept even when the server closes before taking the whole body. */
function post(url: string, headers: Record<string, string>, body: Buffer, localAddress = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (a: Answer) => {
      if (!settled) resolve(a);
      settled = true;
    };
    const req = httpRequest(url, { method: 'POST', agent: false, localAddress, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        settle({ status: res.statusCode ?? 0, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : text });
      });
      res.on('error', (err) => settle({ status: res.statusCode ?? 0, headers: res.headers, body: null, error: err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => settle({ status: 0, headers: {}, body: null, error: err.code ?? err.message }));
    req.end(body);
  });
}

const statusField = (pid: number, field: 'VmRSS' | 'VmHWM') => {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
};

let app: AppProcess;
let dir: string;
let key: string;
test.before(async () => {
  dir = tempDir();
  const env = testEnv(dir, { MAILWRIGHT_RATE_LIMIT: '0', MAILWRIGHT_UPLOAD_MEMORY_MB: String(BUDGET_MB), MAILWRIGHT_LOG_LEVEL: 'info' });
  app = await startAppProcess(env);
  key = (await runCli(['key', 'create', '--name', 'flood'], env)).stdout.trim();
});
test.after(async () => {
  await app.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${app.url}/api/v1${path}`, { key, ...opts });
const upload = (draftId: string, body: Buffer, localAddress?: string) =>
  post(`${app.url}/api/v1/drafts/${draftId}/attachments`, { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body, localAddress);

test(`${UPLOADS} parallel 9.9 MB uploads: RSS within baseline + upload_memory_mb + 100 MiB, each 201 or 429, the stored ones intact`, async () => {
  const pid = app.child.pid!;
  const drafts: string[] = [];
  for (let i = 0; i <= UPLOADS; i++) drafts.push((await api('/drafts', { method: 'POST', body: {} })).body.id);
  // The code paths warmed by one small upload before the baseline, so the bound measures the flood alone.
  assert.is((await upload(drafts[UPLOADS], Buffer.from('warm'))).status, 201);
  const baseline = statusField(pid, 'VmRSS');
  // Linux: writing 5 to clear_refs resets the peak (VmHWM) to the current RSS; sampling covers a kernel without it.
  let hwm = true;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    hwm = false;
  }
  let sampled = baseline;
  const sampler = setInterval(() => (sampled = Math.max(sampled, statusField(pid, 'VmRSS'))), 20);
  // One key, sixty client addresses: what a limit per address would not stop.
  const answers = await Promise.all(drafts.slice(0, UPLOADS).map((id, i) => upload(id, FILE, `127.0.1.${i + 1}`)));
  clearInterval(sampler);
  const peak = Math.max(sampled, hwm ? statusField(pid, 'VmHWM') : 0);
  const bound = baseline + (BUDGET_MB + 100) * MiB;
  const counts = answers.reduce<Record<string, number>>((n, a) => ((n[a.status || a.error!] = (n[a.status || a.error!] ?? 0) + 1), n), {});
  console.log(`baseline ${(baseline / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB (bound ${(bound / MiB).toFixed(0)}), answers ${JSON.stringify(counts)}`);

  assert.ok(peak <= bound, `peak RSS ${(peak / MiB).toFixed(0)} MiB over the bound ${(bound / MiB).toFixed(0)} MiB`);
  for (const a of answers) {
    assert.ok(a.status === 201 || a.status === 429, `an upload answered ${a.status || a.error}: ${JSON.stringify(a.body)}`);
    if (a.status === 429) {
      assert.is(a.body.error.code, 'uploads_busy');
      assert.match(a.body.error.message, /upload_memory_mb/);
      assert.match(String(a.headers['retry-after']), /^\d+$/);
    }
  }
  const stored = answers.filter((a) => a.status === 201);
  assert.ok(stored.length >= 1, 'some uploads went through');
  const first = stored[0].body;
  const back = await fetch(`${app.url}/api/v1/attachments/${first.id}`, { headers: { authorization: `Bearer ${key}` } });
  const digest = createHash('sha256').update(Buffer.from(await back.arrayBuffer())).digest('hex');
  assert.is(digest, createHash('sha256').update(FILE).digest('hex'), 'a stored file comes back byte for byte');
  assert.is(first.sha256, digest);

  // The flood is over: every share was given back, so five refused uploads (49.5 MB of the 64 MiB) now go through
  // at once, and a refusal kept nothing.
  const refused = [...answers.keys()].filter((i) => answers[i].status === 429);
  const retried = refused.slice(0, 5);
  for (const again of await Promise.all(retried.map((i) => upload(drafts[i], FILE)))) assert.is(again.status, 201, `once the flood is over: ${JSON.stringify(again.body)}`);
  const files = await Promise.all(drafts.slice(0, UPLOADS).map(async (id) => (await api(`/drafts/${id}`)).body.attachments as Array<{ sizeBytes: number }>));
  for (const [i, f] of files.entries()) {
    const expected = answers[i].status === 201 || retried.includes(i) ? 1 : 0;
    assert.is(f.length, expected, `draft ${i}: ${expected} file(s)`);
    if (expected) assert.is(f[0].sizeBytes, FILE.length);
  }
});

test.run();
