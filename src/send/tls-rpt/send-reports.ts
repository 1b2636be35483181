// The daily TLS report (RFC 8460): every hour, each day before today (UTC) with sessions counted for a policy
// domain whose `_smtp._tls` TXT asks for reports gets its report, by mail to `mailto:` (DKIM-signed, through the
// box's own outbound transport, outside any workspace: no send, no quota, no events) and by POST to `https:`
// (5.1, 5.2, 5.3). A day is forgotten once a rua took it, every rua refused it for good, or the domain asks for
// none; a report that could not go out yet is tried again the next hour, until its counts are pruned after KEEP_DAYS.
import tls from 'node:tls';
import cron from 'node-cron';
import { oncePerBox } from '../../cluster/once.ts';
import type { App } from '../../context.ts';
import { get } from '../../db/query.ts';
import { sign } from '../../mail/sign.ts';
import { signingKey } from '../../domains/dkim-keys.ts';
import { FetchRefused, safeRequest } from '../../dns/safe-fetch.ts';
import type { Transport } from '../deliver.ts';
import { joinTxt, parseTlsRptRecord } from '../mta-sts/records.ts';
import { dayCounts, forgetDay, pendingReports, pruneOld, utcDay } from './counts.ts';
import { buildReport, reportMessage, type ReportInput } from './report.ts';

type Outcome = { state: 'sent' } | { state: 'failed' | 'retry'; reason: string };

/** The verified domain on the box that `host` belongs to (mx.example.com: example.com), the longest such name. */
const hostDomain = (host: string) =>
  get<{ id: string; workspace_id: string; name: string }>("SELECT id, workspace_id, name FROM domains WHERE status = 'verified' AND (name = ? OR ? LIKE '%.' || name) ORDER BY length(name) DESC LIMIT 1", host, host);

const KEEP_DAYS = 3;
/** A domain's DNS chooses where reports go: a few addresses, not a mailing list of strangers. */
const MAX_RUA = 5;
/** The local part reports come from, at the box's hostname. */
export const REPORT_SENDER = 'tls-reports-noreply';

export interface ReportRun {
  sent: Array<{ domain: string; day: string; rua: string }>;
  /** Why a report or a rua was not sent (no record, no signing key, deferred ...). */
  skipped: Array<{ domain: string; day: string; reason: string }>;
}

export class TlsReports {
  private job: ReturnType<typeof cron.schedule> | null = null;
  private running: Promise<ReportRun> | null = null;

  constructor(
    private readonly app: App,
    private readonly transport: Transport,
    private readonly opts: { tlsCa?: string } = {},
  ) {}

  start(): void {
    // Hourly, so a report that was deferred goes out within the day; a day's report is built once the day is over.
    // Once per box, whichever node's timer fires first (cluster/once.ts): a domain gets each day's report once.
    this.job = cron.schedule('29 * * * *', () => void oncePerBox(this.app, 'tls-reports', 60 * 60_000, () => this.run()).catch((err: unknown) => this.app.log.error('TLS reports failed; they are tried again next hour', { err })), { noOverlap: true });
  }

  async stop(): Promise<void> {
    await this.job?.stop();
    await this.running?.catch(() => {});
  }

  /** One pass; `now` is the clock's unless given (a test's "tomorrow"). */
  run(now = this.app.clock.now()): Promise<ReportRun> {
    this.running ??= this.pass(now).finally(() => (this.running = null));
    return this.running;
  }

  private async pass(now: number): Promise<ReportRun> {
    const { store, log } = this.app;
    const result: ReportRun = { sent: [], skipped: [] };
    await store.write(() => pruneOld(now, KEEP_DAYS), { acknowledged: false });
    for (const { day, domain } of await store.read(pendingReports(utcDay(now)))) {
      const skip = (reason: string) => result.skipped.push({ domain, day, reason });
      let rua: string[];
      try {
        rua = (parseTlsRptRecord(joinTxt(await this.app.dns.resolveTxt(`_smtp._tls.${domain}`)))?.rua ?? []).slice(0, MAX_RUA);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENODATA' && code !== 'ENOTFOUND') {
          skip(`_smtp._tls.${domain} lookup failed (${code}); tried again next hour`);
          continue;
        }
        rua = [];
      }
      if (rua.length === 0) {
        skip('the domain publishes no TLS-RPT record');
        await store.write(() => forgetDay(day, domain), { acknowledged: false });
        continue;
      }
      const signer = await this.signer();
      const input: ReportInput = {
        day,
        domain,
        organization: this.app.config.hostname,
        submitter: signer?.domain ?? this.app.config.hostname,
        contact: `postmaster@${this.app.config.hostname}`,
        rows: await store.read(dayCounts(day, domain)),
      };
      const report = buildReport(input);
      // Forgotten once a rua took the report or every rua refused it for good; tried again next hour otherwise.
      let retry = false;
      let taken = false;
      for (const uri of rua) {
        const outcome = uri.toLowerCase().startsWith('mailto:') ? await this.mail(uri, report, input, signer, now) : await this.post(uri, report.gzip);
        if (outcome.state === 'sent') {
          taken = true;
          result.sent.push({ domain, day, rua: uri });
        } else {
          retry ||= outcome.state === 'retry';
          skip(`${uri}: ${outcome.reason}`);
        }
      }
      if (taken || !retry) await store.write(() => forgetDay(day, domain), { acknowledged: false });
    }
    if (result.sent.length || result.skipped.length) log.info('TLS reports', { sent: result.sent.length, skipped: result.skipped.length, reasons: result.skipped.slice(0, 20) });
    return result;
  }

  /**
   * RFC 8460 3: reports by mail MUST carry a DKIM signature of the submitter. The box signs with the key of
   * the domain on it that its hostname belongs to (mx.example.com: example.com); without one, no mail goes.
   */
  private async signer() {
    const host = this.app.config.hostname.toLowerCase();
    const row = await this.app.store.read(hostDomain(host));
    return row ? await this.app.store.read(signingKey(row.workspace_id, row.id, row.name, false)) : null;
  }

  private async mail(uri: string, report: ReturnType<typeof buildReport>, input: ReportInput, key: Awaited<ReturnType<TlsReports['signer']>>, now: number): Promise<Outcome> {
    if (!key) return { state: 'failed', reason: `not sent: no verified domain on the box covers the hostname ${this.app.config.hostname}, so there is no DKIM key to sign the report with (RFC 8460 3)` };
    const to = decodeURIComponent(uri.slice('mailto:'.length).split('?')[0]!).trim();
    const at = to.lastIndexOf('@');
    if (at <= 0 || /[\s<>]/.test(to)) return { state: 'failed', reason: `not sent: ${JSON.stringify(to)} is not an address` };
    const raw = await sign(reportMessage(report, { ...input, from: `${REPORT_SENDER}@${this.app.config.hostname}`, to, now }), key);
    const domain = to.slice(at + 1).toLowerCase();
    // The null sender: a report that bounces has nobody to tell, and must not make a bounce of its own.
    const [outcome] = await this.transport.deliver(domain, [{ id: report.reportId, envelopeFrom: '', recipients: [to], raw }], this.transport.relayFor(key.domain, domain));
    if (outcome?.result === 'delivered') return { state: 'sent' };
    return { state: outcome?.result === 'bounced' ? 'failed' : 'retry', reason: `${outcome?.result ?? 'deferred'}: ${outcome?.response ?? 'no outcome'}` };
  }

  private async post(uri: string, gzip: Buffer): Promise<Outcome> {
    try {
      const res = await safeRequest(uri, { method: 'POST', headers: { 'content-type': 'application/tlsrpt+gzip', 'user-agent': 'Mailwright' }, body: gzip }, {
        resolver: this.app.dns,
        allowPrivate: this.app.config.allowPrivateDelivery,
        timeoutMs: 30_000,
        ...(this.opts.tlsCa ? { ca: [...tls.rootCertificates, this.opts.tlsCa] } : {}),
      });
      if (res.status >= 200 && res.status < 300) return { state: 'sent' };
      // A 4xx will say the same tomorrow; a 5xx may not (RFC 8460 5.2 leaves retries to the sender).
      return { state: res.status >= 500 ? 'retry' : 'failed', reason: `answered ${res.status}` };
    } catch (err) {
      return { state: err instanceof FetchRefused ? 'failed' : 'retry', reason: (err as Error).message };
    }
  }
}
