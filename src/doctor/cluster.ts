// doctor's look at a box kept in PostgreSQL: the server's version, its replicas and how far behind they are,
// the database's size, and the nodes on record, with how far each one's clock is from the database's.
import type { Check } from './health.ts';
import { all, value, type Query } from '../db/query.ts';
import { NODE_LEASE_MS, type NodeRecord } from '../cluster/nodes.ts';

/** The oldest PostgreSQL the box is made for (its schema, SQL and functions). */
const MIN_VERSION = 150000;
/** A replica further behind than this would lose that much acknowledged mail if it were promoted now. */
const LAG_NOTED_S = 30;
/** Clocks further apart than this shift leases, schedules and the dates mail carries. */
const SKEW_NOTED_MS = 2000;

export function* databaseChecks(): Query<Check[]> {
  const checks: Check[] = [];
  const version = (yield* value<number>('SELECT current_setting(\'server_version_num\')::bigint'))!;
  const shown = (yield* value<string>("SELECT current_setting('server_version')"))!;
  const mib = Math.round((yield* value<number>('SELECT pg_database_size(current_database())'))! / 1024 / 1024);
  if (version < MIN_VERSION) checks.push({ ok: false, text: `PostgreSQL ${shown}: the box needs 15 or later`, fix: 'upgrade the server (pg_upgradecluster on Debian)' });
  else checks.push({ ok: true, text: `PostgreSQL ${shown}, the database is ${mib.toLocaleString('en')} MiB` });
  const replicas = yield* all<{ name: string; state: string | null; lag: number | null }>(
    "SELECT coalesce(nullif(application_name, ''), client_addr::text, 'a replica') AS name, state, extract(epoch FROM replay_lag)::float8 AS lag FROM pg_stat_replication ORDER BY 1",
  );
  if (replicas.length === 0 && (yield* value<number>('SELECT pg_is_in_recovery()::int')) === 0) checks.push({ ok: true, text: 'no streaming replica is connected to this server (nothing to check)' });
  for (const r of replicas) {
    const lag = r.lag ?? 0;
    // PostgreSQL shows a replica's state and lag only to roles with pg_read_all_stats (pg_monitor has it).
    if (r.state === null) {
      const role = (yield* value<string>('SELECT current_user'))!;
      checks.push({ ok: false, text: `replica ${r.name} is connected, but the role ${role} may not see its state or how far behind it is`, fix: `as PostgreSQL's superuser: GRANT pg_monitor TO ${role}` });
    } else if (r.state !== 'streaming') checks.push({ ok: false, text: `replica ${r.name} is ${r.state}, not streaming`, fix: 'see the replica server\'s log; it catches up by itself once it can connect' });
    else if (lag > LAG_NOTED_S) checks.push({ ok: false, text: `replica ${r.name} is ${lag.toFixed(1)} s behind`, fix: 'a replica this far behind would lose that much mail if promoted: check its disk and network' });
    else checks.push({ ok: true, text: `replica ${r.name} is streaming, ${lag.toFixed(1)} s behind` });
  }
  return checks;
}

export function* nodeChecks(now: number): Query<Check[]> {
  const nodes = yield* all<NodeRecord & { skew_ms: number }>('SELECT id, host, pid, seen_at, skew_ms FROM nodes ORDER BY id');
  if (nodes.length === 0) return [{ ok: true, text: 'no node is running (serve is stopped everywhere)' }];
  return nodes.map((n) => {
    const name = `node ${n.id} (${n.host}, pid ${n.pid})`;
    const silent = now - n.seen_at;
    if (silent > NODE_LEASE_MS) return { ok: false, text: `${name} has not been heard from for ${Math.round(silent / 1000)} s`, fix: 'a node that stopped: the others take back its work and forget it within a minute; if it runs, it cannot reach the database' };
    if (Math.abs(n.skew_ms) > SKEW_NOTED_MS) return { ok: false, text: `${name}'s clock is ${(n.skew_ms / 1000).toFixed(1)} s ${n.skew_ms > 0 ? 'ahead of' : 'behind'} the database's`, fix: `synchronize the clocks (systemd-timesyncd or chrony on ${n.host} and the database server)` };
    return { ok: true, text: `${name} is running; its clock is within ${(Math.abs(n.skew_ms) / 1000).toFixed(1)} s of the database's` };
  });
}
