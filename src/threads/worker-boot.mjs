// Entry file of every worker thread (worker-pool.ts): a worker's entry must be plain JavaScript, because
// tsx's hooks do not load a .ts entry inside a worker. It names the thread, sets its priority, registers tsx
// unless the module is plain JavaScript (serve from the build in lib/; a test's data: module may import
// TypeScript), then imports the module named by the pool. It must do nothing else: the work and its protocol
// live in that module.
import { readlinkSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';

if (!workerData.module.endsWith('.js')) (await import('tsx/esm/api')).register();
// Named after tsx's hooks thread is made: threads inherit their maker's name, and that one is not the pool's.
// On Linux a thread may rename itself, so `top -H` and `ps -L` show mw-writer, mw-sign, mw-analyze instead of
// a row of identical "node" threads. Elsewhere this file does not exist, and the name does not matter.
try {
  writeFileSync('/proc/thread-self/comm', `mw-${workerData.name}`.slice(0, 15));
} catch {}
// On Linux a thread has a nice value of its own, set by its id ("<pid>/task/<tid>"); lowering one's own
// priority needs no privilege.
if (workerData.nice) {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), workerData.nice);
  } catch {}
}
await import(workerData.module);
