// Runs a domain's DNS checks through the box's resolver and records the outcome: on demand (POST
// /domains/:id/verify, `doctor`) and periodically for every domain whose last check is older than
// MAILWRIGHT_DNS_RECHECK_MINUTES (a node-cron tick each minute picks the ones due). With dkim_ed25519 the tick
// also gives every domain without one an ed25519 key, and a check that finds its record published starts its
// signature.
import type { App } from '../context.ts';
import type { Config } from '../config/config.ts';
import type { Db } from '../db/open.ts';
import { checkDkim, checkDomain, checkInboundMx, type RecordCheck } from '../dns/verify.ts';
import { dkimName, dkimValue, type DomainDns } from '../dns/records.ts';
import {
  activeDkimKey,
  addEd25519Key,
  domainsWithoutEd25519,
  ed25519DkimKey,
  generateDkimKey,
  generateEd25519Key,
  pendingDkimKey,
  promotePendingKey,
  retireOldKeys,
  startEd25519Signing,
  startRotation,
} from './dkim-keys.ts';
import { domainsDue, recordCheck, type DomainRow } from './domains.ts';
import { domainPolicy, policyFetch, wantsMtaSts } from './mta-sts.ts';
import { checkMtaSts } from '../dns/mta-sts-check.ts';
import { storageFault } from '../db/health.ts';
import { recordAudit, systemActor, type AuditActor } from '../account/audit.ts';
import { runOn } from '../db/sqlite-query.ts';

/** The records a domain must publish; its ed25519 key's only while dkim_ed25519 is on. */
export function domainDns(db: Db, config: Pick<Config, 'hostname' | 'dkimEd25519'>, row: DomainRow): DomainDns {
  const key = activeDkimKey(db, row.workspace_id, row.id)!;
  const ed = config.dkimEd25519 ? ed25519DkimKey(db, row.workspace_id, row.id) : null;
  return {
    domain: row.name,
    returnPath: row.return_path,
    selector: key.selector,
    publicKey: key.publicKey,
    hostname: config.hostname,
    ...(ed ? { ed25519: { selector: ed.selector, publicKey: ed.publicKey } } : {}),
    ...(wantsMtaSts(row) ? { mtaSts: { policyId: domainPolicy(row, config.hostname).id } } : {}),
  };
}

/** The MTA-STS and TLS-RPT checks (none until inbound is set up): records, policy host, and the policy fetched. */
export async function checkDomainMtaSts(app: Pick<App, 'dns' | 'config' | 'fetchCa'>, row: DomainRow, timeoutMs?: number): Promise<RecordCheck[]> {
  if (!wantsMtaSts(row)) return [];
  return checkMtaSts(app.dns, { domain: row.name, hostname: app.config.hostname, mode: row.mta_sts_mode }, policyFetch(app, timeoutMs));
}

export async function verifyDomain(app: App, row: DomainRow, mode: 'manual' | 'periodic', actor?: AuditActor): Promise<DomainRow | null> {
  // A local domain (mailwright try) has no DNS to ask: it stays as markLocal made it.
  if (row.local) return row;
  await promoteIfPublished(app, row);
  const dns = domainDns(app.db, app.config, row);
  const [records, inbound, mtaSts] = await Promise.all([checkDomain(app.dns, dns), checkInboundMx(app.dns, row.name, app.config.hostname), checkDomainMtaSts(app, row)]);
  const results = [...records, ...mtaSts];
  await startEd25519IfPublished(app, row, dns, results);
  return recordCheck(app.db, app.clock, row.workspace_id, row.id, results, inbound, mode, actor);
}

/**
 * The ed25519 signature (RFC 8463) is added only once DNS serves its record exactly, as a rotation's key waits:
 * before that, a receiver that knows ed25519 would find a signature it cannot check.
 */
async function startEd25519IfPublished(app: App, row: DomainRow, dns: DomainDns, results: RecordCheck[]): Promise<void> {
  if (!dns.ed25519 || !results.some((r) => r.algorithm === 'ed25519' && r.state === 'verified')) return;
  if (await app.commit.run(() => startEd25519Signing(app.db, row.workspace_id, row.id))) {
    app.log.info('dkim: the ed25519 record is published; mail now gets an ed25519 signature beside the RSA one', { domain: row.name, selector: dns.ed25519.selector });
  }
}

/** dkim_ed25519 on: each domain without an ed25519 key gets one, to publish; returns how many did. */
export async function giveEd25519Keys(app: App): Promise<number> {
  if (!app.config.dkimEd25519) return 0;
  const missing = domainsWithoutEd25519(app.db, BATCH);
  let added = 0;
  for (const d of missing) {
    const key = await generateEd25519Key();
    if (!(await app.commit.run(() => addEd25519Key(app.db, app.clock, d.workspace_id, d.id, key)))) continue;
    added++;
    app.log.warn('dkim: new ed25519 key (dkim_ed25519): publish its record; its signature is added once DNS serves it', {
      domain: d.name,
      record: { type: 'TXT', name: dkimName({ selector: key.selector, domain: d.name }), value: dkimValue(key.publicKey, 'ed25519') },
    });
  }
  return added;
}

/**
 * A rotation's key starts signing only once DNS serves it exactly (so no receiver ever sees a signature it
 * cannot check), and the key it replaces stays published for the queue's lifetime: mail signed with it and
 * still queued keeps verifying.
 */
async function promoteIfPublished(app: App, row: DomainRow): Promise<void> {
  const pending = pendingDkimKey(app.db, row.workspace_id, row.id);
  if (!pending) return;
  const check = await checkDkim(app.dns, { ...domainDns(app.db, app.config, row), selector: pending.selector, publicKey: pending.publicKey });
  if (check.state !== 'verified') return;
  if (await app.commit.run(() => promotePendingKey(app.db, app.clock.now(), row.workspace_id, row.id, app.config.queueLifetime))) {
    app.log.info('dkim: the new key is published and now signs', { domain: row.name, selector: pending.selector });
  }
}

const BATCH = 50;

/** One tick of the periodic re-check; returns how many domains it checked. */
export async function recheckDueDomains(app: App): Promise<number> {
  const retired = await app.commit.run(() => retireOldKeys(app.db, app.clock.now()));
  if (retired) app.log.info('dkim: old keys past the queue lifetime retired; their DNS records may be removed', { count: retired });
  // A full disk ends the tick (the rest would fail alike); its caller says so once, not each minute per domain.
  await giveEd25519Keys(app).catch((err: unknown) => {
    if (storageFault(err) === 'full') throw err;
    app.log.error('dkim: could not give domains their ed25519 keys', { err });
  });
  const due = domainsDue(app.db, app.clock.now() - app.config.dnsRecheckMinutes * 60_000, BATCH);
  for (const row of due) {
    try {
      const after = await verifyDomain(app, row, 'periodic', systemActor('dns_recheck'));
      if (after && after.status !== row.status) app.log.warn('domain status changed by periodic DNS check', { domain: row.name, workspaceId: row.workspace_id, from: row.status, to: after.status });
    } catch (err) {
      if (storageFault(err) === 'full') throw err;
      app.log.error('periodic DNS check failed', { domain: row.name, err });
    }
  }
  return due.length;
}

/**
 * Scheduled rotation (dkim_rotation_days): a domain whose signing key is older than that gets a new pending key
 * (no more than one waiting); it signs once its record is published, as for a rotation asked for by hand.
 */
export async function rotateDueKeys(app: App): Promise<number> {
  const days = app.config.dkimRotationDays;
  if (!days) return 0;
  const due = app.db
    .prepare(
      `SELECT d.id, d.workspace_id, d.name FROM domains d JOIN dkim_keys k ON k.domain_id = d.id AND k.signing = 1 AND k.algorithm = 'rsa'
       WHERE k.created_at < ? AND NOT EXISTS (SELECT 1 FROM dkim_keys p WHERE p.domain_id = d.id AND p.signing = 0 AND p.retired_at IS NULL AND p.retire_after IS NULL AND p.algorithm = 'rsa')`,
    )
    .all(app.clock.now() - days * 24 * 60 * 60_000) as Array<{ id: string; workspace_id: string; name: string }>;
  for (const d of due) {
    const key = await generateDkimKey();
    await app.commit.run(() => {
      if (pendingDkimKey(app.db, d.workspace_id, d.id)) return;
      startRotation(app.db, app.clock, d.workspace_id, d.id, key);
      runOn(app.db, recordAudit(app.clock.now(), systemActor('dkim_rotation_days'), { workspaceId: d.workspace_id, action: 'domain.dkim_rotated', target: { type: 'domain', id: d.id, name: d.name }, data: { selector: key.selector } })); // Bridge: domains/ is not on queries yet
    });
    app.log.warn('dkim: scheduled rotation: publish the new record; the current key signs until DNS serves it', { domain: d.name, selector: key.selector });
  }
  return due.length;
}
