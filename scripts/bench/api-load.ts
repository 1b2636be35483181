// Load generator for api-send.ts, run in a child process of its own (so its CPU is not the server's):
// `concurrency` clients, each on its own keep-alive connection, POST about 1 KB of JSON to the URL one request
// after another. After the warm-up it tells the parent 'start', at the end of the window 'end', then stops
// sending, waits for the answers in flight and sends the result.
import http from 'node:http';

export interface LoadOptions {
  url: string;
  key: string | null;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  from: string;
  recipientDomain: string;
  bodyBytes: number;
}

export interface LoadResult {
  /** 200s answered inside the window. */
  windowOk: number;
  windowSeconds: number;
  /** Latency of the requests answered inside the window, ms, sorted. */
  latencies: number[];
  /** Every answer of the whole run (warm-up included) by status; 0 = no answer (socket error). */
  statuses: Record<string, number>;
  firstError: string | null;
}

const opts = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
const send = (message: unknown) => process.send!(message);

const url = new URL(opts.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });

function body(client: number, n: number): string {
  const base = { from: opts.from, to: `c${client}-${n}@${opts.recipientDomain}`, subject: `API benchmark, client ${client}, request ${n}`, text: '' };
  const pad = Math.max(0, opts.bodyBytes - JSON.stringify(base).length);
  return JSON.stringify({ ...base, text: 'API benchmark text. '.repeat(Math.ceil(pad / 20)).slice(0, pad) });
}

function post(payload: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', (err) => resolve({ status: 0, text: String(err) }));
      },
    );
    req.on('error', (err) => resolve({ status: 0, text: String(err) }));
    req.end(payload);
  });
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const windowStart = t0 + opts.warmupMs;
  const windowEnd = windowStart + opts.durationMs;
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let windowOk = 0;
  let firstError: string | null = null;
  setTimeout(() => send({ type: 'start' }), opts.warmupMs);
  setTimeout(() => send({ type: 'end' }), opts.warmupMs + opts.durationMs);
  await Promise.all(
    Array.from({ length: opts.concurrency }, async (_, client) => {
      for (let n = 0; performance.now() < windowEnd; n++) {
        const payload = body(client, n);
        const started = performance.now();
        const { status, text } = await post(payload);
        const ended = performance.now();
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status !== 200) firstError ??= `${status} ${text.slice(0, 300)}`;
        if (ended >= windowStart && ended < windowEnd) {
          latencies.push(ended - started);
          if (status === 200) windowOk++;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  agent.destroy();
  // Disconnect only once the result is handed over: an IPC message still queued would be lost.
  const result: LoadResult = { windowOk, windowSeconds: opts.durationMs / 1000, latencies, statuses, firstError };
  process.send!({ type: 'result', result }, () => process.disconnect());
}

await main();
