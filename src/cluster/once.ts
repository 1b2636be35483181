// Periodic jobs that the box runs once, however many nodes' timers fire for them (start/schedules.ts): the
// first node to record a run takes it, the others find it recorded and skip. A run is recorded as a write, and
// writes take turns (db/store.ts), so two nodes can never both take the same run, and a run that finished
// quickly is not taken again by a node whose timer fired a moment later. oneAtATime is the same record used as
// a lease: held while the job runs, given back when it ends.
import { run, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';

/**
 * Records that `name` starts now on node `node`, unless a run of it started less than `withinMs` ago (another
 * node took this one). True when this node is to run it.
 */
export function* takeRun(name: string, now: number, withinMs: number, node: number): Query<boolean> {
  const taken = yield* value<string>(
    `INSERT INTO job_runs (name, started_at, node_id) VALUES (?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at, node_id = excluded.node_id WHERE job_runs.started_at <= ?
     RETURNING name`,
    name, now, node, now - withinMs,
  );
  return taken !== undefined;
}

/**
 * Runs `job` unless another node already ran this occurrence. `periodMs` is how often its timer fires: a run
 * begun in the last half period is this occurrence's.
 */
export async function oncePerBox(app: { store: Store; clock: { now(): number }; node: { id: number } }, name: string, periodMs: number, job: () => Promise<unknown>): Promise<void> {
  if (await app.store.write(() => takeRun(name, app.clock.now(), periodMs / 2, app.node.id), { acknowledged: false })) await job();
}

/**
 * Runs `job` unless another node is running it now, and resolves with whether this node ran it. For work that
 * must never run on two nodes at once but may run again as soon as it ended (ACME orders: talking to the CA
 * from one node only). The run is recorded as begun now and ended when `job` settles; a node that stops
 * mid-way keeps the others out until `leaseMs` passed.
 */
export async function oneAtATime(app: { store: Store; clock: { now(): number }; node: { id: number } }, name: string, leaseMs: number, job: () => Promise<unknown>): Promise<boolean> {
  const now = app.clock.now();
  if (!(await app.store.write(() => takeRun(name, now, leaseMs, app.node.id)))) return false;
  try {
    await job();
  } finally {
    await app.store.write(() => run('UPDATE job_runs SET started_at = 0 WHERE name = ? AND node_id = ? AND started_at = ?', name, app.node.id, now)).catch(() => {});
  }
  return true;
}
