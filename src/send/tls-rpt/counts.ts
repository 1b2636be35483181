// The box's outbound TLS sessions counted for TLS-RPT (RFC 8460 4.4), in tls_rpt_counts: one row per UTC day,
// policy domain, policy, result and receiving MX, its count raised per session. Reading a day back as the
// report's `policies`, and forgetting what was reported or grew too old. Queries (db/query.ts) only: it must
// not send anything.
import { all, run, type Query } from '../../db/query.ts';
import type { TlsSessionResult } from '../tls-requirement.ts';

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function* countSession(session: TlsSessionResult, now: number): Query<void> {
  const { policy, failure } = session;
  yield* run(
    `INSERT INTO tls_rpt_counts (day, policy_domain, policy_type, policy_string, mx_host, result_type, sending_ip, receiving_mx, receiving_ip, reason, count)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
     ON CONFLICT (day, policy_domain, policy_type, policy_string, mx_host, result_type, sending_ip, receiving_mx, receiving_ip)
     DO UPDATE SET count = tls_rpt_counts.count + 1, reason = excluded.reason`,
    utcDay(now),
    session.domain.toLowerCase(),
    policy.type,
    JSON.stringify(policy.strings),
    JSON.stringify(policy.mxHost),
    failure?.type ?? '',
    // A success is counted per policy only: where it went matters for failures (RFC 8460 4.4 failure-details).
    failure ? session.sendingIp : '',
    failure ? session.receivingMx : '',
    failure ? session.receivingIp : '',
    failure?.reason.slice(0, 500) ?? '',
  );
}

export interface CountRow {
  policy_type: 'sts' | 'tlsa' | 'no-policy-found';
  policy_string: string;
  mx_host: string;
  result_type: string;
  sending_ip: string;
  receiving_mx: string;
  receiving_ip: string;
  reason: string;
  count: number;
}

/** Days before `today` with sessions still unreported, per policy domain, oldest first. */
export function pendingReports(today: string): Query<Array<{ day: string; domain: string }>> {
  return all<{ day: string; domain: string }>('SELECT DISTINCT day, policy_domain AS domain FROM tls_rpt_counts WHERE day < ? ORDER BY day, policy_domain', today);
}

export function dayCounts(day: string, domain: string): Query<CountRow[]> {
  return all<CountRow>('SELECT * FROM tls_rpt_counts WHERE day = ? AND policy_domain = ? ORDER BY policy_type, policy_string, result_type', day, domain);
}

export function* forgetDay(day: string, domain: string): Query<void> {
  yield* run('DELETE FROM tls_rpt_counts WHERE day = ? AND policy_domain = ?', day, domain);
}

/** Counts older than `keepDays` whatever became of their report, and cached policies expired that long ago. */
export function* pruneOld(now: number, keepDays: number): Query<number> {
  const oldest = utcDay(now - keepDays * 86_400_000);
  const counts = yield* run('DELETE FROM tls_rpt_counts WHERE day < ?', oldest);
  yield* run('DELETE FROM mta_sts_policies WHERE expires_at < ?', now - keepDays * 86_400_000);
  return counts;
}
