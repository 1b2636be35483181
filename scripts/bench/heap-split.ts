// Where a `serve` process's memory goes, thread by thread, while a benchmark loads it: node's diagnostic report
// (--report-on-signal) asked for every few seconds, which carries each thread's V8 heap (the event loop's and every
// worker's), beside the process's RSS read from /proc at the same moment. Benchmark-only: the flags go on the
// child's command line through NODE_OPTIONS, and the server's code knows nothing of it. A report blocks the
// event loop while it is written, without the network part (reverse lookups of every socket's endpoints), and
// waits for each worker thread to answer: five a second took 10 % off the inbound rate at 100 sessions, so one
// every BENCH_HEAP_SPLIT_MS (default 5000; 0 takes none but the one after the load).
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir, fmt, procMemoryMiB } from './lib.ts';

/** NODE_OPTIONS that make `serve` write a report into `dir` on SIGUSR2. */
export const reportOptions = (dir: string) => `--report-on-signal --report-signal=SIGUSR2 --report-compact --report-exclude-network --report-directory=${dir}`;

interface Heap {
  /** V8's committed heap (MiB): what the thread's isolate holds of the RSS. */
  total: number;
  /** Live objects, as far as V8 knows between collections (MiB). */
  used: number;
  /** Memory outside the heap that V8 accounts to the isolate, mostly ArrayBuffers (MiB). */
  external: number;
}

interface Sample {
  rss: number;
  main: Heap;
  /** One heap per worker thread, named by kind (see kindOf). */
  workers: Array<{ kind: string; heap: Heap }>;
}

export interface HeapSampler {
  /** NODE_OPTIONS for the process to be sampled. */
  nodeOptions: string;
  start(pid: number): void;
  /** Stops sampling; the split at the sample with the highest RSS, as one line of notes. */
  stop(): Promise<string>;
  /** After stop(): one more report now, its split as one line of notes; the reports' directory is removed. */
  last(): Promise<string>;
}

const MiB = (bytes: number) => bytes / 2 ** 20;
const heapOf = (h: { totalMemory: number; usedMemory: number; externalMemory: number }): Heap => ({ total: MiB(h.totalMemory), used: MiB(h.usedMemory), external: MiB(h.externalMemory) });

/**
 * A worker's kind, from its heap limit: the analyze pool caps its workers' old generation (analyzer.ts, 512 MiB),
 * the writer's is V8's default (about 4 GiB on this machine). In the inbound run there are only these two.
 */
const kindOf = (limit: number) => (limit < 2 ** 30 ? 'analyze' : 'writer/other');

export function heapSampler(everyMs = Number(process.env.BENCH_HEAP_SPLIT_MS ?? 5000)): HeapSampler {
  const dir = benchDir('mw-bench-reports-');
  mkdirSync(dir, { recursive: true });
  const rssAt = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let pid = 0;
  let n = 0;
  return {
    nodeOptions: reportOptions(dir),
    start(p) {
      pid = p;
      if (!(everyMs > 0)) return;
      timer = setInterval(() => {
        try {
          // The report is written a few ms later; the RSS read now is the one it is compared with.
          rssAt.set(String(n++), procMemoryMiB(pid).rss);
          process.kill(pid, 'SIGUSR2');
        } catch {}
      }, everyMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await new Promise((r) => setTimeout(r, 300)); // the last report being written
      const samples = read();
      for (const f of readdirSync(dir)) rmSync(join(dir, f), { force: true });
      if (!samples.length) return 'no heap reports were written';
      const top = samples.reduce((a, b) => (b.rss > a.rss || !(a.rss >= 0) ? b : a));
      const peakMain = Math.max(...samples.map((s) => s.main.total + s.main.external));
      return `memory split at the highest RSS sampled (${fmt(top.rss)} MiB, ${samples.length} samples ${fmt(everyMs / 1000)} s apart), ${describe(top)}; the event loop's heap + external peaked at ${fmt(peakMain)}`;
    },
    async last() {
      const rss = procMemoryMiB(pid).rss;
      rssAt.set(String(n++), rss);
      try {
        process.kill(pid, 'SIGUSR2');
      } catch {}
      await new Promise((r) => setTimeout(r, 500));
      const [sample] = read().slice(-1);
      rmSync(dir, { recursive: true, force: true });
      return sample ? `memory split then (${fmt(rss)} MiB: ${rssKinds(pid)}), ${describe(sample)}` : 'no heap report was written';
    },
  };

  function read(): Sample[] {
      const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
      const samples: Sample[] = [];
      for (const file of files) {
        try {
          const r = JSON.parse(readFileSync(join(dir, file), 'utf8'));
          // report.<date>.<time>.<pid>.<thread>.<sequence from 1>.json
          const seq = Number(/\.(\d+)\.json$/.exec(file)?.[1] ?? NaN);
          samples.push({
            rss: rssAt.get(String(seq - 1)) ?? NaN,
            main: heapOf(r.javascriptHeap),
            workers: (r.workers ?? []).map((w: any) => ({ kind: kindOf(w.javascriptHeap.memoryLimit), heap: heapOf(w.javascriptHeap) })),
          });
        } catch {} // a report cut short by the process's exit
      }
      return samples;
  }
}

/** RSS by kind from /proc/<pid>/status: anonymous (heaps, malloc) and file-backed (the node binary, libraries). */
function rssKinds(pid: number): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mib = (field: string) => fmt(Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024);
    return `${mib('RssAnon')} anonymous, ${mib('RssFile')} file-backed`;
  } catch {
    return 'gone';
  }
}

function describe(s: Sample): string {
  const heaps = s.workers.reduce((sum, w) => sum + w.heap.total + w.heap.external, s.main.total + s.main.external);
  const h = (x: Heap) => `${fmt(x.total)} (${fmt(x.used)} used) + ${fmt(x.external)} external`;
  return (
    `V8 heap MiB committed (used) + external: event loop ${h(s.main)}; ${s.workers.map((w) => `${w.kind} ${h(w.heap)}`).join('; ') || 'no worker threads'}; ` +
    `the rest (code, libraries, malloc, SQLite) ${fmt(s.rss - heaps)}`
  );
}
