// The App value that app.ts builds once and hands to every front door and flow: configuration, the
// database, logging, time, DNS and sockets are passed in, never reached for from a module (docs/architecture.md).
import type { Resolver } from 'node:dns/promises';
import type { Socket } from 'node:net';
import type { Clock } from './clock.ts';
import type { NodeCache } from './db/node-cache.ts';
import type { Node } from './cluster/nodes.ts';
import type { Config, Plan } from './config/config.ts';
import type { Db } from './db/open.ts';
import type { Store } from './db/store.ts';
import type { StoreHealth } from './db/health.ts';
import type { Idempotency } from './db/idempotency.ts';
import type { Log } from './log.ts';
import type { DbContext, Writer } from './db/writer.ts';
import type { Metrics } from './metrics/metrics.ts';
import type { FairPool } from './threads/fair-pool.ts';

/**
 * Opens a connection to an address (never a name) and port, settling once it is connected; `signal` aborts
 * it (the connect timeout). The socket is the caller's from then on.
 */
export type Dial = (to: { host: string; port: number }, signal: AbortSignal) => Promise<Socket>;

/**
 * Opens a hosted checkout for one plan (billing/: `manual`, a page of this box, or Stripe Checkout); app.ts
 * builds the one `billing_provider` names. `checkoutId` is the box's own `chk_` id, recorded by the caller.
 */
export interface CheckoutProvider {
  readonly name: 'manual' | 'stripe';
  checkout(input: { checkoutId: string; workspaceId: string; plan: Plan }): Promise<{ url: string; providerSessionId: string | null }>;
}

export interface App {
  config: Config;
  /** Where the box's state is kept: every resource's queries run here (db/store.ts). */
  store: Store;
  /** On PostgreSQL, what this node keeps of keys, domains, plans and label rules (db/node-cache.ts); null on SQLite. */
  cache: NodeCache | null;
  /**
   * The data directory's SQLite connection, for what only SQLite has (its file, checkpoints, free pages);
   * absent when the store is PostgreSQL (database_url).
   */
  db?: Db;
  log: Log;
  clock: Clock;
  dns: Resolver;
  /** Where outgoing SMTP connections come from (send/connect.ts dialTcp; a test or a proxy can put its own). */
  dial: Dial;
  /** Whether the database can be trusted: the first corruption SQLite reports anywhere turns /healthz to 503. */
  health: StoreHealth;
  /** This process among the box's nodes (cluster/nodes.ts): what it claims carries its id. */
  node: Node;
  /** Commits received mail and sends: a thread of its own on SQLite, transactions on PostgreSQL. */
  writer: Pick<Writer, 'commit' | 'close'>;
  idempotency: Idempotency;
  /** The outbound queue; wake() makes it look for due work now (after a submit). */
  queue: { wake(): void };
  /** Signing at acceptance (send/presign.ts): accepted() after a send to go now is committed. */
  presign: { accepted(emailIds: readonly string[]): void };
  /** Releases scheduled sends at their time; wake() after one is added or moved. */
  scheduler: { wake(): void };
  /** Teaches the spam filter what owners corrected (receive/trainer.ts); wake() after a correction is committed. */
  spamTrainer?: { wake(): void };
  /**
   * The daily TLS report (send/tls-rpt/send-reports.ts); run() sends what is due now, `now` standing in for
   * the clock (tests). Absent in try mode and where no app was assembled.
   */
  tlsReports?: { run(now?: number): Promise<{ sent: Array<{ domain: string; day: string; rua: string }>; skipped: Array<{ domain: string; day: string; reason: string }> }> };
  /** Whether free space under the data directory is below min_free_space_mb (db/free-space.ts). */
  disk?: { readonly low: boolean };
  /** Where POST /billing/checkout sends the owner to pay (or confirm). */
  billing: CheckoutProvider;
  /** Extra CA certificates (PEM) that outgoing HTTPS fetches trust: the local providers of tests. */
  fetchCa?: string;
  /**
   * The threads that render large hosted templates, shared fairly between workspaces
   * (templates/render-pool.ts posts its jobs and reads their answers; the job's shape is templates/').
   */
  templateRenders: FairPool<unknown, unknown>;
  /** Prometheus counters and gauges (GET /metrics); absent where no app was assembled (the CLI, some tests). */
  metrics?: Metrics;
}

/** What code that only reads and writes the database needs: all a writer job gets (db/writer.ts). */
export type { DbContext };
