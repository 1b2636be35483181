// The App value that app.ts builds once and hands to every front door and flow: configuration, the
// database, logging, time and DNS are passed in, never reached for from a module (ARCHITECTURE.md).
import type { Resolver } from 'node:dns/promises';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Db } from './db/open.ts';
import type { GroupCommit } from './db/group-commit.ts';
import type { Idempotency } from './http/idempotency.ts';
import type { Log } from './log.ts';

export interface App {
  config: Config;
  db: Db;
  log: Log;
  clock: Clock;
  dns: Resolver;
  /** Shared-fsync writes for the SMTP and send paths. */
  commit: GroupCommit;
  idempotency: Idempotency;
  /** The outbound queue; wake() makes it look for due work now (after a submit). */
  queue: { wake(): void };
  /** Extra CA certificates (PEM) that outgoing HTTPS fetches trust: the local providers of tests. */
  fetchCa?: string;
}

/**
 * What code that only reads and writes the database needs; all that a thread with its own connection has
 * (the receive pipeline's writer, receive/store-worker.ts).
 */
export type DbContext = Pick<App, 'db' | 'clock' | 'log'>;
