// Nodes sharing PostgreSQL hear each other's commits of events: each node keeps one connection LISTENing on
// `mailwright_events` (a trigger on events and domain_events notifies at COMMIT, postgres/0046_notify.sql), and
// wakes its live stream at once instead of finding the events at its next poll. The connection is outside the
// pool (a listener holds it for ever); lost, it is opened again after a pause, and meanwhile the stream's own
// slow poll still finds everything, only later.
import pg from 'pg';
import type { Log } from '../log.ts';

export const CHANNEL = 'mailwright_events';
const RECONNECT_MS = 2_000;

export interface CommitNotices {
  /** Whether notices are heard now (connected and listening). */
  listening(): boolean;
  stop(): Promise<void>;
}

/** Listens on `url` and calls `heard` for each notice (several commits may share one call). */
export function listenForCommits(url: string, heard: () => void, log: Log): CommitNotices {
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
    if (err) log.warn('event notices: the listening connection was lost; the stream polls until it is back', { err: (err as Error).message });
    retry = setTimeout(connect, RECONNECT_MS);
    retry.unref();
  };

  const connect = async () => {
    retry = null;
    const c = new pg.Client({ connectionString: url, application_name: 'mailwright-listen' });
    client = c;
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', () => heard());
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
      if (stopped) return void (await c.end().catch(() => {}));
      listening = true;
      // What was committed while no one listened is found by this first wake-up.
      heard();
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
