// Entry file of a sign worker thread: a worker's entry must be plain JavaScript, because tsx's hooks do not
// load a .ts entry inside a worker. It registers tsx, then imports the TypeScript module named by the pool.
// It must do nothing else: the work and the protocol live in sign-worker.ts.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.module);
