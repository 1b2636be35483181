// Entry file of every worker thread (worker-pool.ts): a worker's entry must be plain JavaScript, because
// tsx's hooks do not load a .ts entry inside a worker. It registers tsx, then imports the TypeScript module
// named by the pool. It must do nothing else: the work and its protocol live in that module.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.module);
