// A domain's MTA-STS policy (RFC 8461) as the box serves it once the domain receives here: its mode (stored,
// `testing` until the owner switches it), its text and id, the records it asks for, and which domain a policy
// host names. The route that serves it is in routes.ts; the checks are in dns/mta-sts-check.ts.
import type { App } from '../context.ts';
import { column, get, run, type Query } from '../db/query.ts';
import { mtaStsRecords, recordFor, type RecordKind } from '../dns/records.ts';
import { policyHost, policyId, policyText, policyUrl, POLICY_HOST_PREFIX, type MtaStsMode } from '../dns/mta-sts-policy.ts';
import type { PolicyFetch } from '../dns/mta-sts-check.ts';
import type { CheckState, RecordCheck } from '../dns/verify.ts';

interface PolicyRow {
  name: string;
  mta_sts_mode: MtaStsMode;
  inbound_status: string;
  local: number;
}

/** MTA-STS is asked for once inbound is set up (the MX to publish names the box); never for a local domain. */
export const wantsMtaSts = (row: Pick<PolicyRow, 'inbound_status' | 'local'>) => row.inbound_status !== 'not_configured' && row.local === 0;

export function domainPolicy(row: Pick<PolicyRow, 'mta_sts_mode'>, hostname: string) {
  const text = policyText({ mode: row.mta_sts_mode, mx: hostname });
  return { mode: row.mta_sts_mode, text, id: policyId(text) };
}

/** The three records (MTA-STS TXT, the policy host's CNAME, TLS-RPT TXT) a receiving domain publishes. */
export const policyRecords = (row: PolicyRow, hostname: string) => mtaStsRecords(row.name, hostname, domainPolicy(row, hostname).id);

export function* setMtaStsMode(workspaceId: string, id: string, mode: MtaStsMode): Query<void> {
  yield* run('UPDATE domains SET mta_sts_mode = ? WHERE workspace_id = ? AND id = ?', mode, workspaceId, id);
}

/**
 * The policy served for a Host header (`mta-sts.<domain>`, any case, port already dropped), or null: only a
 * domain whose inbound is ready (its MX reaches the box) has one. A name claimed twice (a database from before
 * claims were box-wide) follows the older claim, as mail routing does.
 */
export function* servedPolicy(host: string, hostname: string): Query<string | null> {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!name.startsWith(`${POLICY_HOST_PREFIX}.`)) return null;
  const row = yield* get<PolicyRow>(
    "SELECT name, mta_sts_mode, inbound_status, local FROM domains WHERE name = ? AND inbound_status = 'ready' AND local = 0 ORDER BY created_at, id LIMIT 1",
    name.slice(POLICY_HOST_PREFIX.length + 1),
  );
  return row ? domainPolicy(row, hostname).text : null;
}

/**
 * The policy hosts the box needs a certificate for (ACME, one per name so that one domain's missing DNS never
 * holds up another's): every domain that has inbound set up, ready or not, on any workspace.
 */
export function* policyHosts(): Query<string[]> {
  return (yield* column<string>("SELECT DISTINCT name FROM domains WHERE inbound_status != 'not_configured' AND local = 0 ORDER BY name")).map(policyHost);
}

/** How the box fetches a policy to check it: its resolver, lab mode and test CA as for its other fetches. */
export const policyFetch = (app: Pick<App, 'dns' | 'config' | 'fetchCa'>, timeoutMs?: number): PolicyFetch => ({
  resolver: app.dns,
  allowPrivate: app.config.allowPrivateFetch,
  ca: app.fetchCa,
  port: app.config.mtaStsPort,
  ...(timeoutMs ? { timeoutMs } : {}),
});

export interface TransportFinding {
  record: RecordKind;
  state: CheckState;
  /** What was checked: `<name> <type>`, or the policy's URL. */
  label: string;
  /** Why it is not right; null when verified. */
  message: string | null;
  /** What to do, as doctor says it; null when verified. */
  fix: string | null;
}

/** The MTA-STS and TLS-RPT checks as doctor (and the Overview's doctor) word them, each with its fix. */
export function transportFindings(row: PolicyRow, hostname: string, checks: RecordCheck[]): TransportFinding[] {
  const records = policyRecords(row, hostname);
  return checks.map((check) => {
    const want = recordFor(records, check);
    const label = want ? `${want.name} ${want.type}` : policyUrl(row.name);
    if (check.state === 'verified') return { record: check.record, state: check.state, label, message: null, fix: null };
    const message = `${check.issue?.message ?? 'not checked'} (recommended)`;
    if (check.state === 'pending') return { record: check.record, state: check.state, label, message, fix: 'check again in a minute' };
    const fix = want
      ? `publish ${want.name} ${want.type} ${want.type === 'TXT' ? JSON.stringify(want.value) : want.value}`
      : row.inbound_status !== 'ready'
        ? `the box serves the policy once inbound mail is ready (the MX of ${row.name} names ${hostname})`
        : `make ${policyHost(row.name)} reach this box's HTTPS listener with a certificate for that name (the box gets one by ACME once the name resolves here)`;
    return { record: check.record, state: check.state, label, message, fix };
  });
}
