// Sending domains of a workspace: rows, their status rules, and what the API shows of them. Every query
// is scoped by workspace. Status moves only on what DNS answered: a temporary DNS failure never changes
// it, and the periodic re-check un-verifies a domain only after two consecutive checks found it broken.
import type { Clock } from '../clock.ts';
import { iso, isoOrNull } from '../clock.ts';
import { newId } from '../db/ids.ts';
import { all, column, constraintViolated, get, run, value, type Query } from '../db/query.ts';
import { dkimName, dkimValue, inboundRecord, namesTheBox, recordSlot, requiredRecords, RETURN_PATH_PREFIX, type RecordKind } from '../dns/records.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import type { CheckState, DnsIssue, InboundCheck, RecordCheck } from '../dns/verify.ts';
import type { Config } from '../config/config.ts';
import { activeDkimKey, addEd25519Key, ed25519DkimKey, pendingDkimKey, retiringDkimKeys, storeDkimKey, type KeyMaterial } from './dkim-keys.ts';
import { claimedElsewhere } from './claims.ts';
import { announceCheck } from './dns-changes.ts';
import { systemActor, type AuditActor } from '../account/audit.ts';
import { domainPolicy, wantsMtaSts } from './mta-sts.ts';
import { MTA_STS_MAX_AGE, policyUrl, type MtaStsMode } from '../dns/mta-sts-policy.ts';

export type DomainStatus = 'pending' | 'verified' | 'failed';
export type InboundStatus = 'not_configured' | 'dns_pending' | 'ready';

export interface Checks {
  ses: boolean;
  dkim: boolean;
  spf: boolean;
  returnPath: boolean;
  dmarc: boolean;
  mx: boolean;
  /** The _mta-sts TXT, the policy host and the policy file as senders fetch it (once inbound is set up). */
  mtaSts: boolean;
  tlsRpt: boolean;
}

interface DnsState {
  /** By records.ts recordSlot: the kind, or `DKIM:ed25519` for the ed25519 key's record (never required). */
  records: Partial<Record<string, CheckState>>;
  issues: DnsIssue[];
  checks: Checks;
}

export interface DomainRow {
  id: string;
  workspace_id: string;
  name: string;
  return_path: string;
  status: DomainStatus;
  dns_state: string | null;
  checked_at: number | null;
  verified_at: number | null;
  failure_streak: number;
  marketing: number;
  open_tracking: number;
  click_tracking: number;
  /** JSON array of https URL prefixes (0034): whose own one-click pair marketing mail keeps. */
  unsubscribe_urls: string;
  inbound_status: InboundStatus;
  inbound_checked_at: number | null;
  inbound_issue: string | null;
  created_at: number;
  /** 1 for a local domain of `mailwright try` (markLocal): verified and receiving without DNS, never DNS-checked. */
  local: number;
  /** 0038: the mode of the MTA-STS policy served for the domain. */
  mta_sts_mode: MtaStsMode;
}

const REQUIRED: RecordKind[] = ['DKIM', 'SPF', 'MX'];
// How many consecutive periodic checks must find a verified domain broken before it is un-verified.
const UNVERIFY_AFTER = 2;

/** The name is in this workspace already (`elsewhere` false), or overlaps another workspace's claim (true). */
export class DomainExists extends Error {
  constructor(
    name: string,
    readonly elsewhere = false,
  ) {
    super(name);
  }
}

/** `ed25519`: the domain's ed25519 key (dkim_ed25519), stored beside the RSA key; it signs once DNS serves it. */
export function* createDomain(clock: Clock, workspaceId: string, name: string, key: KeyMaterial, ed25519?: KeyMaterial): Query<DomainRow> {
  const id = newId('dom', clock.now());
  try {
    if (yield* claimedElsewhere(workspaceId, name)) throw new DomainExists(name, true);
    yield* run('INSERT INTO domains (id, workspace_id, name, return_path, created_at) VALUES (?, ?, ?, ?, ?)', id, workspaceId, name, `${RETURN_PATH_PREFIX}.${name}`, clock.now());
    yield* storeDkimKey(clock, workspaceId, id, key);
    if (ed25519) yield* addEd25519Key(clock, workspaceId, id, ed25519);
  } catch (err) {
    if (constraintViolated(err) === 'unique') throw new DomainExists(name);
    throw err;
  }
  return (yield* getDomain(workspaceId, id))!;
}

/** What every send checks of its From domain: only these columns, since the row also holds its DNS records. */
export const findSendingDomain = (workspaceId: string, name: string) =>
  get<Pick<DomainRow, 'id' | 'status' | 'marketing' | 'return_path'>>('SELECT id, status, marketing, return_path FROM domains WHERE workspace_id = ? AND name = ?', workspaceId, name);

export function* getDomain(workspaceId: string, id: string): Query<DomainRow | null> {
  return (yield* get<DomainRow>('SELECT * FROM domains WHERE workspace_id = ? AND id = ?', workspaceId, id)) ?? null;
}

export const listDomains = (workspaceId: string, page: { limit: number; offset: number }) =>
  all<DomainRow>('SELECT * FROM domains WHERE workspace_id = ? ORDER BY id DESC LIMIT ? OFFSET ?', workspaceId, page.limit + 1, page.offset);

export const verifiedDomainNames = (workspaceId: string) => column<string>("SELECT name FROM domains WHERE workspace_id = ? AND status = 'verified' ORDER BY name", workspaceId);

/** Every domain of every workspace, for the periodic re-check and `doctor`. */
export const allDomains = () => all<DomainRow>('SELECT * FROM domains ORDER BY workspace_id, name');

export function* deleteDomain(workspaceId: string, id: string): Query<boolean> {
  return (yield* run('DELETE FROM domains WHERE workspace_id = ? AND id = ?', workspaceId, id)) > 0;
}

export function* setSwitches(workspaceId: string, id: string, switches: { marketing?: boolean; open_tracking?: boolean; click_tracking?: boolean }): Query<void> {
  for (const [column, value] of Object.entries(switches)) {
    if (value === undefined) continue;
    // Column names come from the validated body's fixed keys, never from the client's strings.
    yield* run(`UPDATE domains SET ${column} = ? WHERE workspace_id = ? AND id = ?`, value ? 1 : 0, workspaceId, id);
  }
}

/** The first-party integration's unsubscribe URL prefixes, already normalised (routes.ts). */
export function* setUnsubscribeUrls(workspaceId: string, id: string, prefixes: string[]): Query<void> {
  yield* run('UPDATE domains SET unsubscribe_urls = ? WHERE workspace_id = ? AND id = ?', JSON.stringify(prefixes), workspaceId, id);
}

/** The unsubscribe URL prefixes of a workspace's sending domain; none when it has no such domain. */
export function* unsubscribePrefixes(workspaceId: string, name: string): Query<string[]> {
  const json = yield* value<string>('SELECT unsubscribe_urls FROM domains WHERE workspace_id = ? AND name = ?', workspaceId, name);
  return json ? (JSON.parse(json) as string[]) : [];
}

/**
 * Applies a DNS check begun at `startedAt` to the domain (read afresh: the lookups took time), records what it
 * announces (dns-changes.ts) as `actor` (the box itself by default), and returns the updated row, or null if the
 * domain was deleted meanwhile. `periodic` is the gentler rule of the background re-check.
 */
export function* recordCheck(clock: Clock, workspaceId: string, id: string, results: RecordCheck[], inbound: InboundCheck, mode: 'manual' | 'periodic', actor: AuditActor = systemActor('dns_check'), startedAt?: number): Query<DomainRow | null> {
  const row = yield* getDomain(workspaceId, id);
  if (!row) return null;
  // A periodic check during which another check was recorded (the owner's verify, a second periodic run) saw the
  // same DNS: counted again, one breakage would make two failures in a row and un-verify the domain at once.
  if (mode === 'periodic' && startedAt !== undefined && row.checked_at !== null && row.checked_at >= startedAt) return row;
  const records = Object.fromEntries(results.map((r) => [recordSlot(r), r.state])) as Record<string, CheckState>;
  const anyFailed = REQUIRED.some((r) => records[r] === 'failed');
  const allVerified = REQUIRED.every((r) => records[r] === 'verified');
  // A temporary DNS failure tells nothing: it neither breaks nor mends the streak.
  const streak = allVerified ? 0 : anyFailed ? row.failure_streak + 1 : row.failure_streak;
  let status = row.status;
  if (allVerified) status = 'verified';
  else if (anyFailed && (mode === 'manual' || (row.status === 'verified' && streak >= UNVERIFY_AFTER))) status = 'failed';
  const ok = (r: RecordKind) => records[r] === 'verified';
  const state: DnsState = {
    records,
    issues: [...results.flatMap((r) => (r.issue ? [r.issue] : [])), ...(row.inbound_status !== 'not_configured' && inbound.issue ? [inbound.issue] : [])],
    checks: { ses: ok('DKIM') && ok('SPF'), dkim: ok('DKIM'), spf: ok('SPF'), returnPath: ok('MX') && ok('SPF'), dmarc: ok('DMARC'), mx: inbound.state === 'verified',
      mtaSts: ok('MTA-STS') && ok('MTA-STS-HOST') && ok('MTA-STS-POLICY'),
      tlsRpt: ok('TLS-RPT'),
    },
  };
  const now = clock.now();
  // A check may promote waiting inbound setup; it never demotes it (that is the owner's inbound verify).
  const inboundStatus = row.inbound_status === 'dns_pending' && inbound.state === 'verified' ? 'ready' : row.inbound_status;
  yield* run(
    `UPDATE domains SET status = ?, dns_state = ?, checked_at = ?, failure_streak = ?, inbound_status = ?,
         verified_at = CASE WHEN ? = 'verified' AND status != 'verified' THEN ? ELSE verified_at END
       WHERE workspace_id = ? AND id = ?`,
    status, JSON.stringify(state), now, streak, inboundStatus, status, now, workspaceId, id,
  );
  const after = (yield* getDomain(workspaceId, id))!;
  yield* announceCheck(now, { before: row, after, results, inbound, mode, actor });
  return after;
}

/** Domains whose last check (or creation) is older than the interval, oldest first; never a local domain. */
export const domainsDue = (before: number, limit: number) =>
  all<DomainRow>('SELECT * FROM domains WHERE local = 0 AND coalesce(checked_at, created_at) < ? ORDER BY coalesce(checked_at, created_at) LIMIT ?', before, limit);

/**
 * Makes a domain local (mailwright try only): verified for sending and ready for inbound mail at once, with no
 * DNS record to publish or check. Its name must be one that never leaves the machine (RFC 6761 .localhost).
 */
export function* markLocal(clock: Clock, workspaceId: string, id: string): Query<void> {
  yield* run(
    "UPDATE domains SET local = 1, status = 'verified', verified_at = coalesce(verified_at, ?), inbound_status = 'ready', inbound_issue = NULL WHERE workspace_id = ? AND id = ?",
    clock.now(),
    workspaceId,
    id,
  );
}

export function* recordInbound(clock: Clock, row: DomainRow, status: InboundStatus, issue: DnsIssue | undefined): Query<DomainRow> {
  yield* run(
    'UPDATE domains SET inbound_status = ?, inbound_checked_at = ?, inbound_issue = ? WHERE workspace_id = ? AND id = ?',
    status,
    clock.now(),
    issue ? JSON.stringify(issue) : null,
    row.workspace_id,
    row.id,
  );
  return (yield* getDomain(row.workspace_id, row.id))!;
}

const stateOf = (row: DomainRow): DnsState | null => (row.dns_state ? (JSON.parse(row.dns_state) as DnsState) : null);

export function setupStatus(row: DomainRow): 'checking' | 'action_required' | 'complete' {
  if (row.local) return 'complete';
  const state = stateOf(row);
  if (!state) return 'action_required';
  if (REQUIRED.every((r) => state.records[r] === 'verified')) return 'complete';
  if (REQUIRED.some((r) => state.records[r] === 'failed')) return 'action_required';
  return 'checking';
}

const NO_CHECKS: Checks = { ses: false, dkim: false, spf: false, returnPath: false, dmarc: false, mx: false, mtaSts: false, tlsRpt: false };
// A state stored before 0038 has no mtaSts or tlsRpt: false until the next check.
export const checksOf = (row: DomainRow): Checks => ({ ...NO_CHECKS, ...stateOf(row)?.checks });

export function presentDomainSummary(row: DomainRow) {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    setup_status: setupStatus(row),
    checks: checksOf(row),
    createdAt: iso(row.created_at),
    checkedAt: isoOrNull(row.checked_at),
    /** A local domain of mailwright try: nothing to publish, never checked. */
    local: row.local === 1,
  };
}

/** `config.dkimEd25519`: the ed25519 key's record is shown (a second DKIM entry) only while the setting is on. */
export function* presentDomain(row: DomainRow, config: Pick<Config, 'hostname' | 'dkimEd25519'>) {
  const { hostname } = config;
  const key = (yield* activeDkimKey(row.workspace_id, row.id))!;
  const ed = config.dkimEd25519 ? yield* ed25519DkimKey(row.workspace_id, row.id) : null;
  const state = stateOf(row);
  const dns = {
    domain: row.name,
    returnPath: row.return_path,
    selector: key.selector,
    publicKey: key.publicKey,
    hostname,
    ...(ed ? { ed25519: { selector: ed.selector, publicKey: ed.publicKey } } : {}),
    ...(wantsMtaSts(row) ? { mtaSts: { policyId: domainPolicy(row, hostname).id } } : {}),
  };
  // A local domain has no DNS: nothing to publish. While the box's own name cannot be right, no record naming
  // it is offered (nor what DNS said of one).
  const badName = row.local ? null : hostnameProblem(hostname);
  const records = (row.local ? [] : requiredRecords(dns)).filter((r) => !(badName && namesTheBox(r))).map((r) => ({
    record: r.record,
    type: r.type,
    name: r.name,
    value: r.value,
    ...(r.priority === undefined ? {} : { priority: r.priority }),
    status: state?.records[recordSlot(r)] ?? 'pending',
  }));
  return {
    ...presentDomainSummary(row),
    records,
    dns_issues: (state?.issues ?? []).filter((i) => !(badName && (i.record === 'INBOUND_MX' || i.record === 'HOST' || namesTheBox(i)))),
    hostnameProblem: badName,
    returnPath: row.return_path,
    dkimSelector: key.selector,
    marketing: row.marketing === 1,
    open_tracking: row.open_tracking === 1,
    click_tracking: row.click_tracking === 1,
    unsubscribe_urls: JSON.parse(row.unsubscribe_urls) as string[],
    inbound: presentInbound(row, hostname),
    mtaSts: presentMtaSts(row, hostname, state),
    dkimRotation: yield* presentRotation(row),
    dkimEd25519: ed && { selector: ed.selector, signing: ed.signing },
    verifiedAt: isoOrNull(row.verified_at),
  };
}

/**
 * The MTA-STS policy the box serves for the domain (null until inbound is set up): its mode, the id the
 * _mta-sts record must carry, where senders fetch it, whether it is served yet (inbound ready) and what the
 * last check of that fetch found. The records are among the domain's `records`.
 */
function presentMtaSts(row: DomainRow, hostname: string, state: DnsState | null) {
  if (!wantsMtaSts(row)) return null;
  const policy = domainPolicy(row, hostname);
  return {
    mode: policy.mode,
    policyId: policy.id,
    policyUrl: policyUrl(row.name),
    served: row.inbound_status === 'ready',
    status: state?.records['MTA-STS-POLICY'] ?? 'pending',
    maxAge: MTA_STS_MAX_AGE,
  };
}

/** A rotation under way: the key waiting for DNS (publish it), and old keys to keep published until their time. */
export function* presentRotation(row: DomainRow) {
  const record = (selector: string, publicKey: string) => ({ type: 'TXT', name: dkimName({ selector, domain: row.name }), value: dkimValue(publicKey) });
  const pending = yield* pendingDkimKey(row.workspace_id, row.id);
  return {
    pending: pending && { selector: pending.selector, record: record(pending.selector, pending.publicKey), startedAt: isoOrNull(pending.createdAt) },
    retiring: (yield* retiringDkimKeys(row.workspace_id, row.id)).map((k) => ({ selector: k.selector, record: record(k.selector, k.publicKey), keepPublishedUntil: isoOrNull(k.retireAfter) })),
  };
}

/** While the box's hostname cannot be right, neither the MX to publish nor what a check expected of it is shown. */
export function presentInbound(row: DomainRow, hostname: string) {
  const badName = !row.local && hostnameProblem(hostname) !== null;
  return {
    status: row.inbound_status,
    record: row.inbound_status === 'not_configured' || badName ? null : inboundRecord(row.name, hostname),
    issue: row.inbound_issue && !badName ? (JSON.parse(row.inbound_issue) as DnsIssue) : null,
    checkedAt: isoOrNull(row.inbound_checked_at),
  };
}
