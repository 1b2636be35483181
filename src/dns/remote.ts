// DNS lookups of a worker thread answered by the thread that started it, over a BroadcastChannel named for
// that pool. A worker that may be terminated at any moment (an analysis past its budget) must hold no c-ares
// query of its own: node 20's cares_wrap aborts the whole process when an answer is parsed while the worker's
// isolate is terminating (FromJust in TxtTraits::Parse, "v8::FromJust Maybe value is Nothing"). A message
// to a terminated worker is simply never read.
import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import type { DnsLookup } from './cache.ts';

type Request = { q: string; name: string; type: string };
type Answer = { a: string; answer: unknown } | { a: string; error: { message: string; code?: string } };

/** Answers the lookups posted on `channel` with `lookup`; returns what stops it. */
export function answerLookups(channel: string, lookup: DnsLookup): () => void {
  const bc = new BroadcastChannel(channel);
  let open = true;
  // An answer that comes after close() has nobody left to hear it.
  const answer = (a: Answer) => open && bc.postMessage(a);
  bc.onmessage = (event) => {
    const m = (event as MessageEvent).data as Request | Answer;
    if (!('q' in m)) return;
    lookup.resolve(m.name, m.type).then(
      (found) => answer({ a: m.q, answer: found }),
      (err: Error & { code?: string }) => answer({ a: m.q, error: { message: err.message, code: typeof err.code === 'string' ? err.code : undefined } }),
    );
  };
  // It must not keep a process alive whose pool is closed.
  bc.unref();
  return () => {
    open = false;
    bc.close();
  };
}

/**
 * A lookup whose queries the thread serving `channel` answers (answerLookups); errors keep their code. close()
 * fails the questions still waiting and lets the thread end.
 */
export function remoteLookup(channel: string): DnsLookup & { close(): void } {
  const bc = new BroadcastChannel(channel);
  const waiting = new Map<string, { resolve: (answer: unknown) => void; reject: (err: Error) => void }>();
  // Questions are told apart by this instance's own prefix: every instance of the channel hears every answer.
  const prefix = randomUUID();
  let next = 0;
  bc.onmessage = (event) => {
    const m = (event as MessageEvent).data as Request | Answer;
    if (!('a' in m)) return; // a question
    const w = waiting.get(m.a);
    if (!w) return; // another thread's answer
    waiting.delete(m.a);
    if (waiting.size === 0) bc.unref();
    if ('answer' in m) w.resolve(m.answer);
    else w.reject(Object.assign(new Error(m.error.message), m.error.code ? { code: m.error.code } : {}));
  };
  // Held open only while a question waits for its answer.
  bc.unref();
  return {
    resolve(name, type) {
      const q = `${prefix}:${next++}`;
      return new Promise((resolve, reject) => {
        if (waiting.size === 0) bc.ref();
        waiting.set(q, { resolve, reject });
        bc.postMessage({ q, name, type } satisfies Request);
      });
    },
    close() {
      const closed = new Error(`the DNS channel ${channel} was closed before the answer came`);
      for (const w of waiting.values()) w.reject(closed);
      waiting.clear();
      bc.close();
    },
  };
}
