// Runs a domain's DNS checks through the box's resolver and records the outcome: on demand (POST
// /domains/:id/verify, `doctor`) and periodically for every domain whose last check is older than
// MAILWRIGHT_DNS_RECHECK_MINUTES (a node-cron tick each minute picks the ones due). With dkim_ed25519 the tick
// also gives every domain without one an ed25519 key, and a check that finds its record published starts its
// signature.
import { systemActor, type AuditActor, recordAudit } from '../account/audit.ts';
import type { App } from '../context.ts';
import type { Config } from '../config/config.ts';
import { all, type Query } from '../db/query.ts';
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

/** The records a domain must publish; its ed25519 key's only while dkim_ed25519 is on. */
export function* domainDns(config: Pick<Config, 'hostname' | 'dkimEd25519'>, row: DomainRow): Query<DomainDns> {
  const key = (yield* activeDkimKey(row.workspace_id, row.id))!;
  const ed = config.dkimEd25519 ? yield* ed25519DkimKey(row.workspace_id, row.id) : null;
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
  const startedAt = app.clock.now();
  await promoteIfPublished(app, row);
  const dns = await app.store.read(domainDns(app.config, row));
  const [records, inbound, mtaSts] = await Promise.all([checkDomain(app.dns, dns), checkInboundMx(app.dns, row.name, app.config.hostname), checkDomainMtaSts(app, row)]);
  const results = [...records, ...mtaSts];
  await startEd25519IfPublished(app, row, dns, results);
  return app.store.write(() => recordCheck(app.clock, row.workspace_id, row.id, results, inbound, mode, actor, startedAt));
}

/**
 * The ed25519 signature (RFC 8463) is added only once DNS serves its record exactly, as a rotation's key waits:
 * before that, a receiver that knows ed25519 would find a signature it cannot check.
 */
async function startEd25519IfPublished(app: App, row: DomainRow, dns: DomainDns, results: RecordCheck[]): Promise<void> {
  if (!dns.ed25519 || !results.some((r) => r.algorithm === 'ed25519' && r.state === 'verified')) return;
  if (await app.store.write(() => startEd25519Signing(row.workspace_id, row.id))) {
    app.log.info('dkim: the ed25519 record is published; mail now gets an ed25519 signature beside the RSA one', { domain: row.name, selector: dns.ed25519.selector });
  }
}

/** dkim_ed25519 on: each domain without an ed25519 key gets one, to publish; returns how many did. */
export async function giveEd25519Keys(app: App): Promise<number> {
  if (!app.config.dkimEd25519) return 0;
  const missing = await app.store.read(domainsWithoutEd25519(BATCH));
  let added = 0;
  for (const d of missing) {
    const key = await generateEd25519Key();
    if (!(await app.store.write(() => addEd25519Key(app.clock, d.workspace_id, d.id, key)))) continue;
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
  const { pending, dns } = await app.store.read(
    (function* () {
      const pending = yield* pendingDkimKey(row.workspace_id, row.id);
      return { pending, dns: pending && (yield* domainDns(app.config, row)) };
    })(),
  );
  if (!pending || !dns) return;
  const check = await checkDkim(app.dns, { ...dns, selector: pending.selector, publicKey: pending.publicKey });
  if (check.state !== 'verified') return;
  if (await app.store.write(() => promotePendingKey(app.clock.now(), row.workspace_id, row.id, app.config.queueLifetime))) {
    app.log.info('dkim: the new key is published and now signs', { domain: row.name, selector: pending.selector });
  }
}

const BATCH = 50;

/** One tick of the periodic re-check; returns how many domains it checked. */
export async function recheckDueDomains(app: App): Promise<number> {
  const retired = await app.store.write(() => retireOldKeys(app.clock.now()));
  if (retired) app.log.info('dkim: old keys past the queue lifetime retired; their DNS records may be removed', { count: retired });
  // A full disk ends the tick (the rest would fail alike); its caller says so once, not each minute per domain.
  await giveEd25519Keys(app).catch((err: unknown) => {
    if (storageFault(err) === 'full') throw err;
    app.log.error('dkim: could not give domains their ed25519 keys', { err });
  });
  const due = await app.store.read(domainsDue(app.clock.now() - app.config.dnsRecheckMinutes * 60_000, BATCH));
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
  const due = await app.store.read(
    all<{ id: string; workspace_id: string; name: string }>(
      `SELECT d.id, d.workspace_id, d.name FROM domains d JOIN dkim_keys k ON k.domain_id = d.id AND k.signing = 1 AND k.algorithm = 'rsa'
       WHERE k.created_at < ? AND NOT EXISTS (SELECT 1 FROM dkim_keys p WHERE p.domain_id = d.id AND p.signing = 0 AND p.retired_at IS NULL AND p.retire_after IS NULL AND p.algorithm = 'rsa')`,
      app.clock.now() - days * 24 * 60 * 60_000,
    ),
  );
  for (const d of due) {
    const key = await generateDkimKey();
    await app.store.write(function* () {
      if (yield* pendingDkimKey(d.workspace_id, d.id)) return;
      yield* startRotation(app.clock, d.workspace_id, d.id, key);
      yield* recordAudit(app.clock.now(), systemActor('dkim_rotation_days'), { workspaceId: d.workspace_id, action: 'domain.dkim_rotated', target: { type: 'domain', id: d.id, name: d.name }, data: { selector: key.selector } });
    });
    app.log.warn('dkim: scheduled rotation: publish the new record; the current key signs until DNS serves it', { domain: d.name, selector: key.selector });
  }
  return due.length;
}
