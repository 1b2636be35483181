// Nodes sharing PostgreSQL hear each other's commits: a trigger notifies a channel at COMMIT, and each node keeps
// one connection LISTENing on it. `mailwright_events` (events and domain_events, postgres/0046_notify.sql) wakes the
// live stream at once instead of at its next poll; `mailwright_settings` (postgres/0051) empties the node's cache of
// keys, domains, plans and rules (db/node-cache.ts). The connection is outside the pool (a listener holds it for
// ever); lost, it is opened again after a pause, and meanwhile the stream's own slow poll still finds everything,
// only later, and the cache keeps nothing.
import pg from 'pg';
import type { Log } from '../log.ts';

export const CHANNEL = 'mailwright_events';
const RECONNECT_MS = 2_000;

export interface CommitNotices {
  /** Whether notices are heard now (connected and listening). */
  listening(): boolean;
  stop(): Promise<void>;
}

/**
 * Listens on `url` and calls `heard` with each notice's payload on `channel` (several commits may share one call),
 * and with '' once each time it starts listening, for what was committed while no one listened.
 */
export function listenForCommits(url: string, heard: (payload: string) => void, log: Log, channel = CHANNEL): CommitNotices {
  let client: pg.Client | null = null;
  let listening = false;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;

  const lost = (err?: unknown) => {
    if (!listening && client === null) return;
    listening = false;
    const gone = client;
    client = null;
    gone?.end().catch(() => {});
    if (stopped) return;
    if (err) log.warn('commit notices: the listening connection was lost; it is opened again in a moment', { channel, err: (err as Error).message });
    retry = setTimeout(connect, RECONNECT_MS);
    retry.unref();
  };

  const connect = async () => {
    retry = null;
    const c = new pg.Client({ connectionString: url, application_name: 'mailwright-listen' });
    client = c;
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => heard(n.payload ?? ''));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (stopped) return void (await c.end().catch(() => {}));
      listening = true;
      // What was committed while no one listened is found by this first wake-up.
      heard('');
    } catch (err) {
      if (client === c) lost(err);
    }
  };

  void connect();
  return {
    listening: () => listening,
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      listening = false;
      await c?.end().catch(() => {});
    },
  };
}
