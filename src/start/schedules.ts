// The box's periodic jobs, started by app.ts once the listeners are up: DNS re-checks, DKIM rotation, the box's
// own DNS record, hourly housekeeping, nightly retention and scheduled backups. Each reads the configuration
// when it runs, so a reload's values apply at the next run; each runs once per box, whichever node's timer fires
// first (cluster/once.ts), but backups on SQLite, which copy this node's data directory. Returns what stops them all.
import cron from 'node-cron';
import type { App } from '../context.ts';
import { FullDiskNotice } from '../db/full-disk.ts';
import { scheduledBackup } from '../db/backup.ts';
import { postgresSnapshot } from '../db/backup-postgres.ts';
import { recheckDueDomains, rotateDueKeys } from '../domains/verification.ts';
import { runRetention } from '../emails/retention.ts';
import { purgeSessions } from '../account/sessions.ts';
import { purgeAuthFailures } from '../account/login-throttle.ts';
import { purgeIdempotencyKeys } from '../db/idempotency.ts';
import { recordBoxDns } from '../account/overview.ts';
import { pruneReceivedReports } from '../feedback/aggregate-reports.ts';
import { pruneAudit } from '../account/audit.ts';
import { oncePerBox } from '../cluster/once.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `boxDns` false (mailwright try): the box's own name is never looked up. */
export function startSchedules(app: App, opts: { boxDns?: boolean } = {}): () => Promise<void> {
  const { clock, log, config } = app;
  const checkBoxDns = async () => {
    if (opts.boxDns === false) return;
    await recordBoxDns(app.store, app.dns, config.hostname, clock.now()).catch((err: unknown) => log.warn('could not record the box DNS', { err }));
  };
  // The first a minute after start, off the start-up path (a box's DNS can be slow or missing).
  const firstBoxDns = setTimeout(() => void checkBoxDns(), 60_000);
  firstBoxDns.unref();
  const databaseUrl = config.databaseUrl;
  const backup = () => (databaseUrl ? oncePerBox(app, 'backup', MINUTE, () => scheduledBackup(config, log, new Date(), postgresSnapshot(databaseUrl))) : scheduledBackup(config, log));
  const [housekeepingDisk, recheckDisk] = [new FullDiskNotice(log, 'housekeeping'), new FullDiskNotice(log, 'periodic DNS re-check')];
  const jobs = [
    // Each minute picks the domains whose last DNS check is older than dns_recheck_minutes.
    cron.schedule('* * * * *', () => oncePerBox(app, 'dns-recheck', MINUTE, () => recheckDueDomains(app)).then(() => recheckDisk.succeeded(), (err: unknown) => recheckDisk.failed(err) || log.error('periodic DNS re-check failed', { err })), { noOverlap: true }),
    // dkim_rotation_days (off by default): keys past their age get a successor to publish.
    cron.schedule('23 * * * *', () => oncePerBox(app, 'dkim-rotation', HOUR, () => rotateDueKeys(app)).then(() => {}, (err: unknown) => log.error('scheduled DKIM rotation failed', { err })), { noOverlap: true }),
    // The box's addresses and PTR names as GET /account shows them, looked up again every hour.
    cron.schedule('41 * * * *', () => oncePerBox(app, 'box-dns', HOUR, checkBoxDns).catch((err: unknown) => log.warn('could not record the box DNS', { err }))),
    cron.schedule('17 * * * *', () =>
      oncePerBox(app, 'housekeeping', HOUR, async () => {
        const purged = { sessionsPurged: await app.store.write(() => purgeSessions(clock)), idempotencyKeysPurged: await app.store.write(() => purgeIdempotencyKeys(clock.now())), authFailuresPurged: await app.store.write(() => purgeAuthFailures(clock)), reportsPurged: await app.store.write(() => pruneReceivedReports(clock.now())), auditRowsPurged: await pruneAuditLog(app) };
        housekeepingDisk.succeeded();
        log.info('housekeeping', purged);
      }).catch((err: unknown) => housekeepingDisk.failed(err) || log.error('housekeeping failed; it runs again next hour', { err })),
    ),
    // Retention (off unless configured, but for the Trash's trash_days): nightly, in small batches, after the
    // backup hour most people pick; it records the database's size each night either way (doctor's growth figure).
    cron.schedule('20 4 * * *', () =>
      oncePerBox(app, 'retention', DAY, () => runRetention(app, { mailDays: config.retentionMailDays, rawDays: config.retentionRawDays, eventsDays: config.retentionEventsDays, trashDays: config.trashDays })).then(
        () => {},
        (err: unknown) => log.error('retention failed; it runs again tomorrow', { err }),
      ),
    { noOverlap: true }),
    // backup_schedule (off by default); a failed backup deletes none of the older ones. On SQLite each node backs
    // up its own data directory; on PostgreSQL the box is one database, backed up once, by whichever node's timer
    // fires first, into that node's backup_dir (a cron line fires at most once a minute: a minute apart is
    // another occurrence).
    ...(config.backupSchedule
      ? [cron.schedule(config.backupSchedule, () => backup().then(() => {}, (err: unknown) => log.error('scheduled backup failed', { err, backupDir: config.backupDir })), { noOverlap: true })]
      : []),
  ];
  return async () => {
    clearTimeout(firstBoxDns);
    for (const job of jobs) await job.stop();
  };
}

/** retention_audit_days (read at each run: a reload's value applies next hour); 0 keeps every row. */
export async function pruneAuditLog(app: Pick<App, 'store' | 'clock' | 'config'>): Promise<number> {
  const days = app.config.retentionAuditDays;
  return days ? app.store.write(() => pruneAudit(app.clock.now() - days * 24 * 60 * 60_000)) : 0;
}
