// The outbound queue: the only place that retries (ARCHITECTURE.md). It claims due recipients with one
// atomic UPDATE (so concurrent workers never take the same one), makes sure each email is composed and
// DKIM-signed exactly once (in the Signer's worker threads) before its first attempt (personalised mail:
// each recipient's own copy, personalise.ts), hands recipients to the Deliverer grouped by destination
// domain, and records every outcome as data: queue row, event, email status, in one group commit. A crash
// leaves claimed rows in 'sending'; start-up puts them back.
import type { App } from '../context.ts';
import type { Signer } from './signer.ts';
import type { Deliverer, OutboundMessage, RecipientOutcome } from './deliver.ts';
import type { ComposeInput } from '../mail/compose.ts';
import type { DkimKey } from '../mail/sign.ts';
import type { Mailbox } from '../mail/addresses.ts';
import { activeDkimKey } from '../domains/dkim-keys.ts';
import { addEvent, refreshEmailStatus } from '../emails/events.ts';
import { expired, retryDelay, type RetryPolicy } from './policy.ts';
import { personalisation, planFor, storedPlan, type Plan } from './personalise.ts';
import { suppressIfHard } from '../feedback/bounces.ts';
import { storageFault } from '../db/health.ts';

interface Claimed {
  id: number;
  email_id: string;
  workspace_id: string;
  recipient: string;
  domain: string;
  attempts: number;
  first_deferred_at: number | null;
  created_at: number;
}

interface EmailRow {
  id: string;
  workspace_id: string;
  domain_id: string | null;
  domain: string;
  message_id: string;
  in_reply_to: string | null;
  refs: string;
  from_address: string;
  from_name: string | null;
  to_json: string;
  cc_json: string;
  reply_to_json: string;
  subject: string;
  headers_json: string;
  message_class: string;
  envelope_from: string;
  raw: Buffer | null;
  created_at: number;
}

export interface QueueOptions {
  policy: RetryPolicy;
  /** Recipients being worked on at once. */
  maxInFlight?: number;
  /** Recipients claimed per UPDATE. */
  batchSize?: number;
  /** A claim older than this is considered abandoned (its worker hung or died) and is put back. */
  leaseMs?: number;
  /** How often to look for work nobody woke us for (retries coming due, `queue flush` from the CLI). */
  pollMs?: number;
  /** With a smarthost every recipient goes the same way, so all are one destination. */
  relay?: boolean;
}

const RELEASE_EVERY_MS = 60_000;
const CLAIM_BACKOFF_MAX_MS = 30_000;
/** How long to wait after the n-th claim in a row failed: 1 s, 2 s, 4 s ... up to CLAIM_BACKOFF_MAX_MS. */
const claimBackoff = (n: number) => Math.min(CLAIM_BACKOFF_MAX_MS, 1000 * 2 ** Math.min(n - 1, 15));

/** An email whose recipients each get their own copy (personalise.ts), and what those copies are made from. */
interface PersonalEmail {
  id: string;
  key: DkimKey;
  plan: Plan;
  input: () => ComposeInput;
  /** Delivery id -> the recipient's position among the email's deliveries (what its link tokens carry). */
  index: Map<number, number>;
  /** The bounce subdomain, where the mailto unsubscribe address is. */
  returnPath: string;
}

/** An email's one signed copy for all its recipients, or its personal copies to make. */
type Signed = { envelopeFrom: string; raw: Buffer } | { envelopeFrom: string; personal: PersonalEmail };

/** A failure that retrying cannot fix (the sending domain and its key are gone). */
class Permanent extends Error {}

/** The outcome of a recipient that never left the box. */
type LocalFailure = Omit<RecipientOutcome, 'result'> & { result: 'failed' | 'deferred' };

export class Queue {
  private inFlight = 0;
  private stopping = false;
  private wakeQueued = false;
  /** Claims that failed in a row (the store could not commit): the next pump waits longer each time. */
  private failedClaims = 0;
  private pumping = false;
  private pumpAgain = false;
  private releasedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly running = new Set<Promise<void>>();
  private readonly signing = new Map<string, Promise<Signed>>();
  private readonly maxInFlight: number;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;

  constructor(
    private readonly app: App,
    private readonly signer: Signer,
    private readonly deliverer: Deliverer,
    private readonly opts: QueueOptions,
  ) {
    this.maxInFlight = opts.maxInFlight ?? 1000;
    this.batchSize = opts.batchSize ?? 200;
    this.leaseMs = opts.leaseMs ?? 30 * 60_000;
    this.pollMs = opts.pollMs ?? 1000;
  }

  /** Puts back what dead processes left claimed (a crash, kill -9), then starts working. */
  start(): void {
    const now = this.app.clock.now();
    const claimants = this.app.db.prepare("SELECT DISTINCT claimed_by FROM deliveries WHERE state = 'sending'").pluck().all() as Array<number | null>;
    let back = 0;
    for (const pid of claimants.filter((p) => p === null || p === process.pid || !alive(p))) {
      back += this.app.db
        .prepare("UPDATE deliveries SET state = CASE WHEN attempts > 0 THEN 'deferred' ELSE 'queued' END, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, updated_at = ? WHERE state = 'sending' AND claimed_by IS ?")
        .run(now, now, pid).changes;
    }
    if (back) this.app.log.warn('queue: recipients left in flight by a process that died are queued again', { count: back });
    void this.pump();
  }

  /** Look for due work soon; many wakes in one turn of the event loop make one pump. */
  wake(): void {
    if (this.wakeQueued || this.stopping) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      void this.pump();
    });
  }

  /** Stops claiming and waits for the attempts under way to finish and be recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    while (this.pumping || this.running.size) await Promise.allSettled([...this.running, new Promise((r) => setTimeout(r, 10))]);
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        if (this.app.clock.now() - this.releasedAt >= RELEASE_EVERY_MS) this.releaseAbandoned();
        while (!this.stopping && this.inFlight < this.maxInFlight) {
          const limit = Math.min(this.batchSize, this.maxInFlight - this.inFlight);
          // The claim is a write: it rides the group commit instead of paying an fsync of its own.
          const rows = await this.app.commit.runUnacknowledged(() => this.claim(limit));
          if (rows.length === 0) break;
          this.inFlight += rows.length;
          const work: Promise<void> = this.process(rows)
            .catch((err) => this.app.log.error('queue: batch failed; its recipients will be put back when their claim expires', { err }))
            .finally(() => {
              this.inFlight -= rows.length;
              this.running.delete(work);
              this.wake();
            });
          this.running.add(work);
        }
      } while (this.pumpAgain && !this.stopping);
      this.failedClaims = 0;
    } catch (err) {
      // Due work would make the next pump at once: a store that cannot commit (a full disk) must not be retried
      // in a tight loop. The wait doubles to CLAIM_BACKOFF_MAX_MS; a full disk is a warning, not our fault.
      this.failedClaims++;
      this.app.health.observe(err);
      const retryMs = claimBackoff(this.failedClaims);
      if (storageFault(err) === 'full') this.app.log.warn('queue: the disk is full; claiming no work until it has room', { retryMs, failures: this.failedClaims });
      else this.app.log.error('queue: could not claim work; trying again shortly', { err, retryMs });
    } finally {
      this.pumping = false;
    }
    if (!this.stopping) this.schedule(this.failedClaims ? claimBackoff(this.failedClaims) : undefined);
  }

  private schedule(minDelayMs = 0): void {
    if (this.timer) clearTimeout(this.timer);
    const next = this.app.db.prepare("SELECT min(next_attempt_at) FROM deliveries WHERE state IN ('queued', 'deferred')").pluck().get() as number | null;
    const delay = Math.max(minDelayMs, next === null ? this.pollMs : Math.min(this.pollMs, Math.max(0, next - this.app.clock.now())));
    this.timer = setTimeout(() => void this.pump(), delay);
    this.timer.unref();
  }

  private claim(limit: number): Claimed[] {
    const now = this.app.clock.now();
    return this.app.db
      .prepare(
        `UPDATE deliveries SET state = 'sending', claimed_at = ?, claimed_by = ?, updated_at = ?
         WHERE id IN (SELECT id FROM deliveries WHERE state IN ('queued', 'deferred') AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?)
         RETURNING id, email_id, workspace_id, recipient, domain, attempts, first_deferred_at, created_at`,
      )
      .all(now, process.pid, now, now, limit) as Claimed[];
  }

  private releaseAbandoned(): void {
    const now = this.app.clock.now();
    this.releasedAt = now;
    this.app.db
      .prepare("UPDATE deliveries SET state = CASE WHEN attempts > 0 THEN 'deferred' ELSE 'queued' END, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, updated_at = ? WHERE state = 'sending' AND claimed_at < ?")
      .run(now, now, now - this.leaseMs);
  }

  private async process(rows: Claimed[]): Promise<void> {
    // Each recipient's bytes: its email's one shared copy, or its own copy when the email is personalised.
    const copies = new Map<number, { raw: Buffer; envelopeFrom: string; shared: boolean }>();
    const unsigned = new Map<number, { permanent: boolean; reason: string }>();
    const failed = (recipients: Claimed[], err: unknown) => {
      // Errors from the signer's workers arrive by name: bad content or a bad key will not get better by waiting.
      const permanent = err instanceof Permanent || ['ComposeError', 'SignError'].includes((err as Error).name);
      this.app.log[permanent ? 'warn' : 'error']('queue: could not compose and sign', { emailId: recipients[0].email_id, err });
      const reason = permanent ? (err as Error).message : `composing or signing failed: ${(err as Error).message}`;
      for (const r of recipients) unsigned.set(r.id, { permanent, reason });
    };
    const byEmail = new Map<string, Claimed[]>();
    for (const r of rows) {
      const recipients = byEmail.get(r.email_id);
      if (recipients) recipients.push(r);
      else byEmail.set(r.email_id, [r]);
    }
    await Promise.all(
      [...byEmail].map(async ([emailId, recipients]) => {
        let signed: Signed;
        try {
          signed = await this.signedMessage(emailId);
        } catch (err) {
          return failed(recipients, err);
        }
        const { envelopeFrom } = signed;
        if ('raw' in signed) {
          for (const r of recipients) copies.set(r.id, { raw: signed.raw, envelopeFrom, shared: true });
          return;
        }
        const email = signed.personal;
        await Promise.all(
          recipients.map((r) =>
            this.signedCopy(email, r).then(
              (raw) => void copies.set(r.id, { raw, envelopeFrom, shared: false }),
              (err) => failed([r], err),
            ),
          ),
        );
      }),
    );
    const notSent = rows.filter((r) => unsigned.has(r.id));
    if (notSent.length) {
      // A permanent local failure ends the recipient ('failed'); anything else is retried like a deferral.
      await this.record(
        notSent,
        notSent.map((r) => {
          const { permanent, reason } = unsigned.get(r.id)!;
          return { messageId: r.email_id, recipient: r.recipient, result: permanent ? 'failed' : 'deferred', code: null, enhanced: null, response: reason, mx: null, tls: false, tlsVerified: false, tlsError: null };
        }),
      );
    }

    const byDestination = new Map<string, Claimed[]>();
    for (const r of rows) {
      if (!copies.has(r.id)) continue;
      const key = this.opts.relay ? 'relay' : r.domain;
      byDestination.set(key, [...(byDestination.get(key) ?? []), r]);
    }
    await Promise.all(
      [...byDestination].map(async ([domain, group]) => {
        // One transaction per shared copy (all its recipients at this destination), one per personal copy.
        const messages = new Map<string, OutboundMessage>();
        for (const r of group) {
          const copy = copies.get(r.id)!;
          const key = copy.shared ? r.email_id : `${r.email_id}/${r.id}`;
          const m = messages.get(key) ?? { id: r.email_id, envelopeFrom: copy.envelopeFrom, recipients: [], raw: copy.raw };
          m.recipients.push(r.recipient);
          messages.set(key, m);
        }
        const outcomes = await this.deliverer.deliver(domain, [...messages.values()]);
        await this.record(group, outcomes);
      }),
    );
  }

  /**
   * The email's signed bytes, made once (in a worker thread), stored, and reused by every attempt; or, for an
   * email whose links name the recipient (personalise.ts), what its per-recipient copies are made from.
   */
  private signedMessage(emailId: string): Promise<Signed> {
    const pending = this.signing.get(emailId);
    if (pending) return pending;
    const work = (async (): Promise<Signed> => {
      const { db } = this.app;
      // Not the bodies: composeInput reads them when a signing worker takes the message.
      const row = db.prepare('SELECT e.*, c.raw FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.id = ?').get(emailId) as EmailRow;
      if (row.raw) return { raw: row.raw, envelopeFrom: row.envelope_from };
      const key = row.domain_id ? activeDkimKey(db, row.workspace_id, row.domain_id) : null;
      if (!key) throw new Permanent(`the sending domain ${row.domain} was deleted before this message was sent`);
      const dkim = { domain: row.domain, selector: key.selector, privateKey: key.privateKey };
      const plan = await planFor(this.app, { ...row, html: () => db.prepare('SELECT html_body FROM email_contents WHERE email_id = ?').pluck().get(emailId) as string | null });
      if (plan) return { envelopeFrom: row.envelope_from, personal: this.personalEmail(row, dkim, plan) };
      const raw = await this.signer.composeAndSign(() => composeInput(db, row), dkim);
      const ours = await this.app.commit.runUnacknowledged(() => {
        // Not beside a plan another process stored meanwhile: one shared copy or per-recipient copies, never both.
        if (!db.prepare('UPDATE email_contents SET raw = ? WHERE email_id = ? AND raw IS NULL AND NOT EXISTS (SELECT 1 FROM personalised_emails WHERE email_id = ?)').run(raw, emailId, emailId).changes) return false;
        db.prepare('UPDATE emails SET size = ?, signed_at = ? WHERE id = ?').run(raw.length, this.app.clock.now(), emailId);
        return true;
      });
      if (ours) return { raw, envelopeFrom: row.envelope_from };
      // Another process signed it first; what is stored is what goes out.
      const stored = db.prepare('SELECT raw FROM email_contents WHERE email_id = ?').pluck().get(emailId) as Buffer | null;
      if (stored) return { raw: stored, envelopeFrom: row.envelope_from };
      return { envelopeFrom: row.envelope_from, personal: this.personalEmail(row, dkim, storedPlan(db, emailId)!) };
    })();
    this.signing.set(emailId, work);
    work.finally(() => this.signing.delete(emailId)).catch(() => {});
    return work;
  }

  private personalEmail(row: EmailRow, key: DkimKey, plan: Plan): PersonalEmail {
    const { db } = this.app;
    let input: ComposeInput | null = null;
    const ids = db.prepare('SELECT id FROM deliveries WHERE email_id = ? ORDER BY id').pluck().all(row.id) as number[];
    return {
      id: row.id,
      key,
      plan,
      // Only a copy not yet signed needs the input (and the attachments read for it).
      input: () => (input ??= composeInput(db, row)),
      index: new Map(ids.map((id, i) => [id, i])),
      returnPath: row.envelope_from.slice(row.envelope_from.lastIndexOf('@') + 1),
    };
  }

  /** A recipient's own copy of a personalised email: signed once, stored before its first attempt, reused by every attempt. */
  private async signedCopy(email: PersonalEmail, r: Claimed): Promise<Buffer> {
    const { db } = this.app;
    const stored = () => db.prepare('SELECT raw FROM delivery_contents WHERE delivery_id = ?').pluck().get(r.id) as Buffer | undefined;
    const done = stored();
    if (done) return done;
    const personal = personalisation(this.app, email.plan, { emailId: email.id, recipient: r.recipient, index: email.index.get(r.id)!, returnPath: email.returnPath });
    const raw = await this.signer.composeAndSign(email.input, email.key, personal);
    const ours = await this.app.commit.runUnacknowledged(() => {
      if (!db.prepare('INSERT INTO delivery_contents (delivery_id, raw) VALUES (?, ?) ON CONFLICT DO NOTHING').run(r.id, raw).changes) return false;
      db.prepare('UPDATE emails SET size = ?, signed_at = ? WHERE id = ? AND signed_at IS NULL').run(raw.length, this.app.clock.now(), email.id);
      return true;
    });
    // A worker whose claim on this recipient had expired may have stored one first; what is stored goes out.
    return ours ? raw : stored()!;
  }

  private async record(rows: Claimed[], outcomes: Array<RecipientOutcome | LocalFailure>): Promise<void> {
    const { db, clock } = this.app;
    const policy = this.opts.policy;
    await this.app.commit.runUnacknowledged(() => {
      const now = clock.now();
      const touched = new Set<string>();
      const byRecipient = new Map(outcomes.map((o) => [`${o.messageId}\n${o.recipient}`, o]));
      for (const row of rows) {
        const o = byRecipient.get(`${row.email_id}\n${row.recipient}`) ?? {
          messageId: row.email_id, recipient: row.recipient, result: 'deferred' as const, code: null, enhanced: null, response: 'no outcome was reported for this recipient', mx: null, tls: false, tlsVerified: false, tlsError: null,
        };
        const attempts = row.attempts + 1;
        const data = { code: o.code, enhancedCode: o.enhanced, response: o.response, mx: o.mx, tls: o.tls, tlsVerified: o.tlsVerified, ...(o.tlsError ? { tlsError: o.tlsError } : {}), attempt: attempts };
        const event = (type: 'delivered' | 'bounced' | 'delivery_delayed' | 'failed', extra: Record<string, unknown> = {}) =>
          addEvent(db, clock, { workspaceId: row.workspace_id, emailId: row.email_id, type, recipient: row.recipient, data: { ...data, ...extra } });
        const finish = (state: string) =>
          db
            .prepare('UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = NULL, claimed_at = NULL, claimed_by = NULL, last_code = ?, last_response = ?, last_mx = ?, updated_at = ? WHERE id = ?')
            .run(state, attempts, o.code, o.response, o.mx, now, row.id);
        if (o.result === 'delivered') {
          finish('delivered');
          event('delivered');
        } else if (o.result === 'bounced') {
          finish('bounced');
          // A refusal saying the address is bad suppresses it for the workspace, in this same commit.
          event('bounced', { hardBounce: suppressIfHard(this.app, { workspaceId: row.workspace_id, emailId: row.email_id, recipient: row.recipient, code: o.code, enhanced: o.enhanced, response: o.response }) });
        } else if (o.result === 'failed') {
          finish('failed');
          event('failed', { reason: o.response });
        } else if (expired(policy, row.created_at, now)) {
          finish('failed');
          event('failed', { reason: `gave up after ${attempts} attempts over ${Math.round((now - row.created_at) / 3_600_000)} h` });
        } else {
          db.prepare(
            "UPDATE deliveries SET state = 'deferred', attempts = ?, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, first_deferred_at = coalesce(first_deferred_at, ?), last_code = ?, last_response = ?, last_mx = ?, updated_at = ? WHERE id = ?",
          ).run(attempts, now + retryDelay(policy, attempts), now, o.code, o.response, o.mx, now, row.id);
          // One delivery_delayed per recipient: when it is first deferred, not at every attempt.
          if (row.first_deferred_at === null) event('delivery_delayed', { nextAttemptAt: new Date(now + retryDelay(policy, attempts)).toISOString() });
        }
        touched.add(row.email_id);
      }
      for (const emailId of touched) refreshEmailStatus(db, emailId);
    });
  }
}

const mailboxes = (json: string) => JSON.parse(json) as Mailbox[];

// Signal 0 checks that a process exists without touching it (all processes on one data directory share a host).
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function composeInput(db: App['db'], row: EmailRow): ComposeInput {
  const body = db.prepare('SELECT text_body, html_body FROM email_contents WHERE email_id = ?').get(row.id) as { text_body: string | null; html_body: string | null };
  const attachments = db
    .prepare('SELECT filename, content_type, content_id, content FROM email_attachments WHERE email_id = ? ORDER BY position')
    .all(row.id) as Array<{ filename: string; content_type: string; content_id: string | null; content: Buffer }>;
  return {
    messageId: row.message_id,
    date: row.created_at,
    from: { ...(row.from_name ? { name: row.from_name } : {}), address: row.from_address },
    to: mailboxes(row.to_json),
    cc: mailboxes(row.cc_json),
    replyTo: mailboxes(row.reply_to_json),
    subject: row.subject,
    ...(body.text_body !== null ? { text: body.text_body } : {}),
    ...(body.html_body !== null ? { html: body.html_body } : {}),
    headers: JSON.parse(row.headers_json) as Record<string, string>,
    attachments: attachments.map((a) => ({ filename: a.filename, content: a.content, contentType: a.content_type, ...(a.content_id ? { contentId: a.content_id } : {}) })),
    ...(row.in_reply_to ? { inReplyTo: row.in_reply_to, references: JSON.parse(row.refs) as string[] } : {}),
  };
}
