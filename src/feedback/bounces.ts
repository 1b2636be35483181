// What a bounce or complaint means for the email it is about: the one rule for a hard bounce (used by the
// queue for the refusals it gets itself and here for DSNs), and acting on a report that arrived at an email's
// VERP address: the recipient's delivery becomes 'bounced', events are added, the address is suppressed.
// Queries (db/query.ts) for the receive transaction, so the 250 to the reporting MTA follows the commit of both
// the stored report and its effects, a notice to a dashboard sender (notices.ts) among them. It changes only
// deliveries of the email the VERP address names.
import type { App } from '../context.ts';
import type { Clock } from '../clock.ts';
import { newId } from '../db/ids.ts';
import { all, get, run, type Query } from '../db/query.ts';
import { addEvent, refreshEmailStatus } from '../emails/events.ts';
import type { DsnRecipient, Report } from '../mail/reports.ts';
import { suppress } from './suppressions.ts';
import { noticeSender } from './notices.ts';

/** A permanent refusal as a delivery attempt or a DSN reports it. */
export interface Refusal {
  /** The SMTP reply code, when there was one. */
  code: number | null;
  /** The RFC 3463 status: the reply's enhanced code, or a DSN's Status. */
  enhanced: string | null;
  /** The reply text or diagnostic. */
  response: string;
}

// RFC 3463 codes that say the address itself is bad: bad mailbox (5.1.1), bad or nonexistent domain (5.1.2),
// bad address syntax (5.1.3), moved with no forwarding address (5.1.6), null MX (5.1.10, RFC 7505), mailbox
// disabled (5.2.1). Not here: the sender's address (5.1.7, 5.1.8), mailbox full (5.2.2), size (5.3.4), no route
// to a domain (5.4.4: its DNS can be fixed), and every policy or content refusal (5.7.x).
const HARD_STATUS = new Set(['5.1.1', '5.1.2', '5.1.3', '5.1.6', '5.1.10', '5.2.1']);
// A reply without an enhanced code (or the catch-all 5.0.0) is hard only when it is one of the codes RFC 5321
// uses for a recipient (550 mailbox unavailable, 551 user not local, 553 mailbox name not allowed) and its
// words say the address does not exist; a reply that mentions the sender is about our side, never the address.
const ADDRESS_CODES = new Set([550, 551, 553]);
const ADDRESS_GONE =
  /\b(?:no such (?:user|mailbox|recipient|address|account)|(?:user|mailbox|recipient|address|account)(?: name)? (?:is )?(?:unknown|not found|does not exist|doesn't exist|invalid|disabled)|unknown (?:user|mailbox|recipient|address|account)|invalid (?:user|mailbox|recipient|address|account)|user not local)\b/i;
const ABOUT_SENDER = /\bsender\b|\bmail from\b|\breturn.path\b/i;

/** Whether a permanent failure says the address is bad: only then is it suppressed. */
export function isHardBounce(r: Refusal): boolean {
  const enhanced = r.enhanced && /^[245]\.\d{1,3}\.\d{1,3}$/.test(r.enhanced) ? r.enhanced : null;
  if (enhanced && enhanced !== '5.0.0') return HARD_STATUS.has(enhanced);
  return r.code !== null && ADDRESS_CODES.has(r.code) && ADDRESS_GONE.test(r.response) && !ABOUT_SENDER.test(r.response);
}

/** Suppresses the recipient of a hard bounce (scope all); says whether it was one. */
export function* suppressIfHard(clock: Clock, b: { workspaceId: string; emailId: string; recipient: string } & Refusal): Query<boolean> {
  if (!isHardBounce(b)) return false;
  const detail = [b.enhanced, b.response].filter(Boolean).join(' ').slice(0, 500);
  yield* suppress(clock, { workspaceId: b.workspaceId, email: b.recipient, scope: 'all', reason: 'hard_bounce', origin: 'recipient', emailId: b.emailId, detail: detail || null });
  return true;
}

interface DeliveryRow {
  id: number;
  recipient: string;
  state: string;
}

// Feedback types that are a recipient's complaint (RFC 5965 7.3). not-spam and auth-failure (RFC 6591, a
// DMARC failure report) are not, and neither is a type nobody registered.
const COMPLAINTS = new Set(['abuse', 'fraud', 'virus', 'other']);

export interface ReportOutcome {
  kind: 'dsn' | 'arf' | 'none';
  /** Recipients whose delivery or events changed, and those suppressed. */
  changed: string[];
  suppressed: string[];
}

/**
 * Acts on a stored report (null: neither a DSN nor a complaint, kept and ignored) and marks it processed.
 * Only recipients the email was delivered to count: a report naming anyone else changes nothing.
 */
export function* applyReport(app: Pick<App, 'db' | 'clock' | 'log' | 'config'>, r: { reportId: string; workspaceId: string; emailId: string; report: Report | null }): Query<ReportOutcome> {
  const { clock } = app;
  const deliveries = yield* all<DeliveryRow>('SELECT id, recipient, state FROM deliveries WHERE email_id = ? AND workspace_id = ?', r.emailId, r.workspaceId);
  const byAddress = new Map(deliveries.map((d) => [d.recipient.toLowerCase(), d]));
  const outcome: ReportOutcome = { kind: r.report?.kind ?? 'none', changed: [], suppressed: [] };
  const ctx = { ...r, app, byAddress, outcome };
  if (r.report?.kind === 'dsn') for (const block of r.report.recipients) yield* applyDsnRecipient(ctx, r.report.reportingMta, block);
  if (r.report?.kind === 'arf') yield* applyComplaint(ctx, r.report, deliveries);
  if (outcome.changed.length) yield* refreshEmailStatus(r.emailId);
  yield* run('UPDATE inbound_reports SET processed_at = ? WHERE id = ?', clock.now(), r.reportId);
  // The writer's log: kept with the commit, and written once even when its batch is run again (db/writer-worker.ts).
  app.log.info('report processed', { report: r.reportId, emailId: r.emailId, ...outcome });
  return outcome;
}

interface ReportContext {
  app: Pick<App, 'db' | 'clock' | 'config'>;
  workspaceId: string;
  emailId: string;
  byAddress: Map<string, DeliveryRow>;
  outcome: ReportOutcome;
}

function* applyDsnRecipient(ctx: ReportContext, reportingMta: string | null, b: DsnRecipient): Query<void> {
  const { clock } = ctx.app;
  // Original-Recipient first: it is the address we gave, when a forwarder changed it on the way.
  const d = ctx.byAddress.get(b.originalRecipient ?? '') ?? ctx.byAddress.get(b.finalRecipient ?? '');
  // Only mail that left the box can bounce later: a blocked, queued or failed recipient was never handed over.
  if (!d || (d.state !== 'delivered' && d.state !== 'bounced')) return;
  const data = { status: b.status, diagnostic: b.diagnostic, remoteMta: b.remoteMta, reportingMta, async: true };
  const event = (type: 'bounced' | 'delivery_delayed', extra: Record<string, unknown> = {}) =>
    addEvent(clock, { workspaceId: ctx.workspaceId, emailId: ctx.emailId, type, recipient: d.recipient, data: { ...data, ...extra } });

  if (b.action === 'failed' && b.status && /^[45]\./.test(b.status)) {
    const refusal = { code: replyCode(b.diagnostic), enhanced: b.status, response: b.diagnostic ?? '' };
    const hard = yield* suppressIfHard(clock, { workspaceId: ctx.workspaceId, emailId: ctx.emailId, recipient: d.recipient, ...refusal });
    if (hard) ctx.outcome.suppressed.push(d.recipient);
    // A recipient already bounced (an earlier copy of this DSN, which MTAs resend after a timeout) gets no second event.
    if (d.state === 'delivered') {
      yield* run("UPDATE deliveries SET state = 'bounced', last_code = ?, last_response = ?, updated_at = ? WHERE id = ?", refusal.code, b.diagnostic ?? b.status, clock.now(), d.id);
      d.state = 'bounced';
      yield* event('bounced', { hardBounce: hard });
      yield* noticeSender(ctx.app, { workspaceId: ctx.workspaceId, emailId: ctx.emailId, recipient: d.recipient, kind: 'bounced', response: b.diagnostic ?? b.status, hardBounce: hard, later: true });
      ctx.outcome.changed.push(d.recipient);
    }
  } else if (b.action === 'delayed' && d.state === 'delivered' && !(yield* hasEvent(ctx, 'delivery_delayed', d.recipient))) {
    // As in the queue: one delivery_delayed per recipient, however many delay notices follow.
    yield* event('delivery_delayed');
    ctx.outcome.changed.push(d.recipient);
  }
}

function* applyComplaint(ctx: ReportContext, report: Extract<Report, { kind: 'arf' }>, deliveries: DeliveryRow[]): Query<void> {
  if (!COMPLAINTS.has(report.feedbackType)) return;
  const delivered = deliveries.filter((d) => d.state === 'delivered');
  // The returned message's To and Cc are the same for every recipient of an email (Bcc recipients are in
  // neither), so they cannot tell recipients apart: the report must name the recipient (Original-Rcpt-To), or
  // the email must have been delivered to only one.
  const named = report.originalRcptTo.length > 0;
  const who = named ? report.originalRcptTo.map((a) => ctx.byAddress.get(a)).filter((d): d is DeliveryRow => d?.state === 'delivered') : delivered.length === 1 ? delivered : [];
  for (const d of new Set(who)) {
    yield* suppress(ctx.app.clock, {
      workspaceId: ctx.workspaceId,
      email: d.recipient,
      scope: 'all',
      reason: 'complaint',
      origin: 'recipient',
      emailId: ctx.emailId,
      detail: `feedback type ${report.feedbackType}${report.userAgent ? ` (${report.userAgent})` : ''}`.slice(0, 500),
    });
    ctx.outcome.suppressed.push(d.recipient);
    if (yield* hasEvent(ctx, 'complained', d.recipient)) continue;
    const data = { feedbackType: report.feedbackType, userAgent: report.userAgent, sourceIp: report.sourceIp, arrivalDate: report.arrivalDate };
    yield* addEvent(ctx.app.clock, { workspaceId: ctx.workspaceId, emailId: ctx.emailId, type: 'complained', recipient: d.recipient, data });
    // The queue row says so too: where the recipient stands is read from deliveries alone (emails/delivery.ts).
    yield* run('UPDATE deliveries SET complained_at = ? WHERE id = ? AND complained_at IS NULL', ctx.app.clock.now(), d.id);
    yield* noticeSender(ctx.app, { workspaceId: ctx.workspaceId, emailId: ctx.emailId, recipient: d.recipient, kind: 'complained', response: null, feedbackType: report.feedbackType, userAgent: report.userAgent });
    ctx.outcome.changed.push(d.recipient);
  }
}

function* hasEvent(ctx: ReportContext, type: string, recipient: string): Query<boolean> {
  return (yield* get('SELECT 1 FROM events WHERE email_id = ? AND type = ? AND recipient = ? LIMIT 1', ctx.emailId, type, recipient)) !== undefined;
}

/** The reply code a diagnostic starts with ("550 5.1.1 ..."), if any. */
const replyCode = (diagnostic: string | null) => {
  const m = /^([245]\d\d)\b/.exec(diagnostic ?? '');
  return m ? Number(m[1]) : null;
};

/** Mail to a VERP bounce address: kept as received, in the transaction that acts on it (receive/file.ts). */
export function* storeReport(clock: Clock, r: { workspaceId: string; emailId: string; mailFrom: string; raw: Buffer }): Query<string> {
  const id = newId('rpt', clock.now());
  yield* run('INSERT INTO inbound_reports (id, workspace_id, email_id, mail_from, raw, received_at) VALUES (?, ?, ?, ?, ?, ?)', id, r.workspaceId, r.emailId, r.mailFrom, r.raw, clock.now());
  return id;
}
