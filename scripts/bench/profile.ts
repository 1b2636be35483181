// CPU profiles of this process over a window the caller chooses, for benchmarks that run the app in-process
// (api-send.ts): the event loop through node:inspector, and every worker thread (the writer, signing, analyze)
// through the inspector's NodeWorker domain, since the pools start their workers without the parent's flags
// (so node --cpu-prof would not reach them). Each thread's profile is written as <dir>/<label>-<thread>.cpuprofile,
// for Chrome DevTools or speedscope.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

interface AttachedWorker {
  sessionId: string;
  title: string;
}

export interface Profiling {
  /** Stops every profiler and writes the profiles; returns the files written. */
  stop(): Promise<string[]>;
}

export async function startProfiling(dir: string, label: string): Promise<Profiling> {
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  const workers: AttachedWorker[] = [];
  let nextId = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  session.on('NodeWorker.attachedToWorker', (m: { params: { sessionId: string; workerInfo: { title: string; url: string } } }) => {
    workers.push({ sessionId: m.params.sessionId, title: m.params.workerInfo.title || m.params.workerInfo.url });
  });
  session.on('NodeWorker.receivedMessageFromWorker', (m: { params: { message: string } }) => {
    const reply = JSON.parse(m.params.message) as { id?: number; result?: unknown };
    if (reply.id !== undefined) waiting.get(reply.id)?.(reply.result);
  });
  const toWorker = (w: AttachedWorker, method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      void session.post('NodeWorker.sendMessageToWorker', { sessionId: w.sessionId, message: JSON.stringify({ id, method, params }) });
    });
  await session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  // attachedToWorker arrives for the workers already running once enable is answered; give it a moment.
  await new Promise((r) => setTimeout(r, 100));
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  for (const w of workers) {
    await toWorker(w, 'Profiler.enable');
    await toWorker(w, 'Profiler.setSamplingInterval', { interval: 200 });
    await toWorker(w, 'Profiler.start');
  }
  return {
    async stop() {
      const files: string[] = [];
      const write = (thread: string, profile: unknown) => {
        const file = join(dir, `${label}-${thread.replace(/[^\w.-]+/g, '_')}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        files.push(file);
      };
      write('main', ((await session.post('Profiler.stop')) as { profile: unknown }).profile);
      for (const [i, w] of workers.entries()) write(`${i}-${w.title}`, ((await toWorker(w, 'Profiler.stop')) as { profile: unknown }).profile);
      session.disconnect();
      return files;
    },
  };
}

/** Self time by function of a .cpuprofile, the `top` entries, as "µs per item" given how many items the window handled. */
export function topFunctions(profile: { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>; samples: number[]; timeDeltas: number[] }, items: number, top = 25): string[] {
  const byNode = new Map<number, number>();
  profile.samples.forEach((node, i) => byNode.set(node, (byNode.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  for (const n of profile.nodes) {
    const micros = byNode.get(n.id);
    if (!micros) continue;
    const where = n.callFrame.url ? `${n.callFrame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${n.callFrame.lineNumber + 1}` : '';
    const key = `${n.callFrame.functionName || '(anonymous)'} ${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + micros);
  }
  return [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, micros]) => `${(micros / items).toFixed(1).padStart(7)} µs  ${name}`);
}
