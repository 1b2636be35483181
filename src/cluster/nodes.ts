// The processes serving this box: one on SQLite, any number sharing PostgreSQL (docs/scaling.md). A node
// registers when it starts and writes that it is alive every HEARTBEAT_MS; the queue's claims name the node
// that holds them (send/claims.ts). A node silent for NODE_LEASE_MS has stopped (kill -9, a lost machine, a
// network cut): the others forget it and take its claims back. A process started on the same host as one that
// died need not wait that long: it asks the system whether that process still runs.
import { hostname } from 'node:os';
import type { Clock } from '../clock.ts';
import type { Log } from '../log.ts';
import type { Store } from '../db/store.ts';
import { all, run, value, type Query } from '../db/query.ts';
import { processRuns } from '../db/serving.ts';
import { FullDiskNotice } from '../db/full-disk.ts';

export const HEARTBEAT_MS = 10_000;
/** Silent this long, a node is taken for stopped: four heartbeats missed and then some. */
export const NODE_LEASE_MS = 45_000;

export interface NodeRecord {
  id: number;
  host: string;
  pid: number;
  seen_at: number;
}

/** The nodes on record, alive or not yet found stopped. */
export const nodesOnRecord = () => all<NodeRecord>('SELECT id, host, pid, seen_at FROM nodes ORDER BY id');

/** The nodes this process runs now (tests run several apps in one process). */
const ours = new Set<number>();

/**
 * Of `nodes`, the ids of those that stopped: silent past the lease, or on this host with their process gone (a
 * node with this process's pid that it does not run was another process's, before). Asked of the system, so
 * outside any query.
 */
export function stoppedNodes(nodes: readonly NodeRecord[], self: number, now: number, host = hostname()): number[] {
  const gone = (n: NodeRecord) => n.host === host && (n.pid === process.pid ? !ours.has(n.id) : !processRuns(n.pid));
  return nodes.filter((n) => n.id !== self && (n.seen_at < now - NODE_LEASE_MS || gone(n))).map((n) => n.id);
}

/** Removes the nodes `ids` from the record; what they claimed is then nobody's (send/claims.ts releaseOrphans). */
export function* forgetNodes(ids: readonly number[]): Query<void> {
  for (const id of ids) yield* run('DELETE FROM nodes WHERE id = ?', id);
}

/**
 * Records that node `id` is alive at `now` (its clock), and on PostgreSQL how far that clock is from the
 * database's: leases and the nodes' Date headers rely on the nodes agreeing on the time (doctor checks it).
 */
const seen = (id: number, now: number) =>
  run(
    {
      sqlite: 'UPDATE nodes SET seen_at = @now WHERE id = @id',
      postgres: 'UPDATE nodes SET seen_at = @now, skew_ms = @now - (extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE id = @id',
    },
    { now, id },
  );

/** This process as a node of the box: its id is 0 until start() registered it. */
export class Node {
  id = 0;
  private timer: NodeJS.Timeout | null = null;
  /** A full disk fails every heartbeat: said once, without a stack, and once when there is room again. */
  private readonly fullDisk: FullDiskNotice;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Log,
  ) {
    this.fullDisk = new FullDiskNotice(log, 'recording that this node is alive');
  }

  /** Registers, or, when the store cannot write (a full disk), says so and tries again at each heartbeat. */
  async start(): Promise<void> {
    await this.join();
    this.timer = setInterval(() => void (this.id ? this.beat() : this.join()), HEARTBEAT_MS);
    this.timer.unref();
  }

  private async join(): Promise<void> {
    try {
      this.id = await this.register();
      ours.add(this.id);
    } catch (err) {
      // Until then the queue claims nothing (a claim is a write too, and names the node).
      this.log.warn('could not record this node yet; its queue waits, and it tries again shortly', { err: (err as Error).message });
    }
  }

  /** Leaves the record once the queue stopped: what the node still held is taken back by the next sweep. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    ours.delete(this.id);
    if (this.id) await this.store.write(() => forgetNodes([this.id])).catch((err: unknown) => this.log.warn('could not take this node off the record; the others will when its lease ends', { err }));
  }

  private async register(): Promise<number> {
    const now = this.clock.now();
    return this.store.write(function* () {
      const id = (yield* value<number>('INSERT INTO nodes (host, pid, started_at, seen_at) VALUES (?, ?, ?, ?) RETURNING id', hostname(), process.pid, now, now))!;
      yield* seen(id, now);
      return id;
    });
  }

  private async beat(): Promise<void> {
    try {
      const beat = await this.store.write(() => seen(this.id, this.clock.now()), { acknowledged: false });
      this.fullDisk.succeeded();
      if (beat || !this.timer) return;
      // Forgotten by the others (silent past the lease: a long pause, a network cut): they took back what it
      // held, so it joins again under a new id rather than claim in the name of a node that stopped.
      const before = this.id;
      ours.delete(before);
      this.id = await this.register();
      ours.add(this.id);
      this.log.warn('this node was taken for stopped by the others and joined again', { node: this.id, was: before });
    } catch (err) {
      if (!this.fullDisk.failed(err)) this.log.warn('could not record that this node is alive; trying again', { err, node: this.id });
    }
  }
}
