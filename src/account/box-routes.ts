// The box as the dashboard's Overview shows it to a workspace: GET /queue (its recipients waiting in the
// outbound queue, by state, and the one deferred longest) and GET /doctor (what `mailwright doctor` checks,
// live through the box's resolver, for this box and this workspace's domains only). A key or a session.
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { iso } from '../clock.ts';
import { apiRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { reverseLookup } from '../dns/resolver.ts';
import { boxAddresses, checkDomain, checkInboundMx, type CheckState } from '../dns/verify.ts';
import { inboundRecord, namesTheBox, recordFor, requiredRecords, type RecordKind } from '../dns/records.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import { checkDomainMtaSts, domainDns } from '../domains/verification.ts';
import { transportFindings } from '../domains/mta-sts.ts';
import type { DomainRow } from '../domains/domains.ts';
import { oldestDeferred, queueCounts } from '../send/queue-stats.ts';
import { acmeChecks } from '../acme/report.ts';
import { all } from '../db/query.ts';

export interface Finding {
  area: 'box' | 'domain';
  /** The box's hostname, or the domain's name. */
  subject: string;
  /** `records`: the domain as a whole, when its checks did not finish in time. */
  check: 'hostname' | 'address' | 'ptr' | 'certificate' | RecordKind | 'inbound_mx' | 'records';
  status: 'ok' | 'problem' | 'pending';
  message: string;
  /** What to do about it, as doctor says it; null when nothing is to be done. */
  fix: string | null;
}

/**
 * A doctor run answers within this long: a resolver that does not answer (5 s, two tries, for each lookup)
 * must not hold the Overview, so a check still running then is reported `pending` and the rest is answered.
 */
export const DOCTOR_BUDGET_MS = 4000;
/** Domains checked at once: each is about six lookups, and a workspace may have hundreds. */
const DOMAINS_AT_ONCE = 8;

export function boxRoutes(app: App) {
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);
  r.get('/queue', auth, async (ctx) => {
    ctx.body = await queueState(app, workspaceOf(ctx));
  });
  r.get('/doctor', auth, async (ctx) => {
    const findings = await doctorFindings(app, workspaceOf(ctx), DOCTOR_BUDGET_MS);
    ctx.body = { checkedAt: iso(app.clock.now()), problems: findings.filter((f) => f.status !== 'ok').length, findings };
  });
  return r;
}

const workspaceOf = (ctx: Context) => principalOf(ctx).workspaceId;

// The workspace's recipients still in the queue (send/queue-stats.ts); final outcomes are in GET /analytics.
export async function queueState(app: App, workspaceId: string) {
  const { counts: { queued, sending, deferred }, oldest } = await app.store.read(
    (function* () {
      return { counts: yield* queueCounts(workspaceId), oldest: yield* oldestDeferred(workspaceId) };
    })(),
  );
  return {
    counts: { queued, sending, deferred },
    oldestDeferred: oldest ? { emailId: oldest.email_id, recipient: oldest.recipient, since: oldest.first_deferred_at === null ? null : iso(oldest.first_deferred_at), lastResponse: oldest.last_response } : null,
  };
}

/** Resolves to `late` if `work` has not finished by `deadline` (a time from Date.now()). */
function by<T>(work: Promise<T>, deadline: number, late: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(late), Math.max(0, deadline - Date.now()))));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

const LATE = (budgetMs: number) => `DNS did not answer within ${budgetMs / 1000} s; check again in a minute`;

/**
 * Doctor's checks for one workspace (src/doctor/doctor.ts, whose `doctor()` prints every workspace's domains and
 * names other workspaces, so it cannot answer one): the box's addresses and forward-confirmed PTR names, and
 * each of the workspace's domains' records with the one to publish. Not here: whether serve listens (it is
 * answering) and the Domain Connect key, a box-wide check for the box's operator.
 */
export async function doctorFindings(app: App, workspaceId: string, budgetMs: number): Promise<Finding[]> {
  const deadline = Date.now() + budgetMs;
  const domains = await app.store.read(all<DomainRow>('SELECT * FROM domains WHERE workspace_id = ? ORDER BY name', workspaceId));
  const perDomain: Finding[][] = new Array(domains.length);
  let next = 0;
  const worker = async () => {
    while (next < domains.length) {
      const i = next++;
      const row = domains[i];
      if (Date.now() >= deadline) {
        perDomain[i] = lateDomain(row, budgetMs);
        continue;
      }
      const checking = domainFindings(app, row).catch((err: unknown): Finding[] => {
        // One domain the checks cannot read must not take the others' findings with it.
        app.log.error('doctor could not check a domain', { domain: row.name, workspaceId, err });
        return [{ area: 'domain', subject: row.name, check: 'records', status: 'pending', message: 'This domain could not be checked; the box logged why', fix: null }];
      });
      perDomain[i] = await by(checking, deadline, lateDomain(row, budgetMs));
    }
  };
  const [box] = await Promise.all([by(boxFindings(app), deadline, [late('box', app.config.hostname, 'address', budgetMs)]), ...Array.from({ length: DOMAINS_AT_ONCE }, worker)]);
  return [...box, ...(await certificateFindings(app)), ...perDomain.flat()];
}

const late = (area: Finding['area'], subject: string, check: Finding['check'], budgetMs: number): Finding => ({ area, subject, check, status: 'pending', message: LATE(budgetMs), fix: null });
const lateDomain = (row: DomainRow, budgetMs: number): Finding[] => [late('domain', row.name, 'records', budgetMs)];

async function boxFindings(app: App): Promise<Finding[]> {
  const hostname = app.config.hostname;
  const at = (check: Finding['check'], status: Finding['status'], message: string, fix: string | null = null): Finding => ({ area: 'box', subject: hostname, check, status, message, fix });
  // As doctor: a name that cannot be right is the problem; its A and PTR (and their fixes naming it) are moot.
  const badName = hostnameProblem(hostname);
  if (badName) return [at('hostname', 'problem', badName.message, badName.fix)];
  const addresses = await boxAddresses(app.dns, hostname);
  if (!addresses.ok) {
    return addresses.missing
      ? [at('address', 'problem', `${hostname} has no A or AAAA record`, `publish an A record for ${hostname} with this box's public address`)]
      : [at('address', 'pending', `looking up ${hostname} failed (${addresses.code})`, 'check MAILWRIGHT_DNS_SERVERS')];
  }
  const found = [at('address', 'ok', `${hostname} has address ${addresses.value.join(', ')}`)];
  for (const ip of addresses.value) {
    const names = await reverseLookup(app.dns, ip).catch(() => [] as string[]);
    found.push(
      names.includes(hostname)
        ? at('ptr', 'ok', `${ip} has PTR ${hostname} (forward-confirmed)`)
        : at('ptr', 'problem', `${ip} has ${names.length ? `PTR ${names.join(', ')}` : 'no PTR record'}, not ${hostname}: receivers distrust mail from it`, `ask your VPS provider to set the reverse DNS of ${ip} to ${hostname}`),
    );
  }
  return found;
}

// Each ACME certificate's names, issuer and expiry, and the last error (acme/report.ts, as doctor says it).
const certificateFindings = async (app: App): Promise<Finding[]> =>
  (await app.store.read(acmeChecks(app.config, app.clock.now()))).map((c) => ({ area: 'box', subject: app.config.hostname, check: 'certificate', status: c.ok ? 'ok' : c.waiting ? 'pending' : 'problem', message: c.text, fix: c.fix ?? null }));

const STATUS: Record<CheckState, Finding['status']> = { verified: 'ok', failed: 'problem', pending: 'pending' };

async function domainFindings(app: App, row: DomainRow): Promise<Finding[]> {
  const dns = await app.store.read(domainDns(app.config, row));
  const records = requiredRecords(dns);
  // The policy fetch gets less than the doctor's budget, so a silent policy host leaves the other findings in time.
  const [checks, inbound, transport] = await Promise.all([
    checkDomain(app.dns, dns),
    row.inbound_status === 'not_configured' ? null : checkInboundMx(app.dns, row.name, app.config.hostname),
    checkDomainMtaSts(app, row, POLICY_FETCH_MS),
  ]);
  const nameOk = hostnameProblem(app.config.hostname) === null;
  const waiting = (check: Finding['check'], label: string): Finding => ({ area: 'domain', subject: row.name, check, status: 'pending', message: `${label}: shown once the box's hostname is a public name`, fix: null });
  const findings = checks.map((check): Finding => {
    const want = recordFor(records, check)!;
    const label = `${want.name} ${want.type}`;
    if (!nameOk && namesTheBox(want)) return waiting(check.record, label);
    if (check.state === 'verified') return { area: 'domain', subject: row.name, check: check.record, status: 'ok', message: label, fix: null };
    const value = want.type === 'MX' ? `${want.priority} ${want.value}` : JSON.stringify(want.value);
    return {
      area: 'domain',
      subject: row.name,
      check: check.record,
      status: STATUS[check.state],
      message: `${label}: ${check.issue?.message}${check.record === 'DMARC' && check.state === 'failed' ? ' (recommended)' : ''}`,
      fix: check.state === 'pending' ? 'check again in a minute' : `publish ${want.name} ${want.type} ${value}`,
    };
  });
  if (inbound && !nameOk) findings.push(waiting('inbound_mx', `${row.name} MX`));
  else if (inbound) {
    const want = inboundRecord(row.name, app.config.hostname);
    findings.push(
      inbound.state === 'verified'
        ? { area: 'domain', subject: row.name, check: 'inbound_mx', status: 'ok', message: `${row.name} MX: inbound mail reaches this box`, fix: null }
        : { area: 'domain', subject: row.name, check: 'inbound_mx', status: STATUS[inbound.state], message: `${row.name} MX: ${inbound.issue?.message}`, fix: `publish ${want.name} MX ${want.value}` },
    );
  }
  for (const f of transportFindings(row, app.config.hostname, transport)) {
    if (!nameOk) findings.push(waiting(f.record, f.label));
    else findings.push({ area: 'domain', subject: row.name, check: f.record, status: STATUS[f.state], message: f.message ? `${f.label}: ${f.message}` : f.label, fix: f.fix });
  }
  return findings;
}

const POLICY_FETCH_MS = 3000;
