// The receive pipeline (ARCHITECTURE.md): what the MX listener hands over after DATA is refused if it is a
// smuggling attempt or a loop, then authenticated (mailauth), parsed (mailparser), and for every inbox it
// was addressed to classified, threaded, stored with its index rows and forwarded if asked, all in one
// group-committed transaction. It resolves only after that commit, so the listener's 250 is never early.
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import { hasSmugglingLookAlike } from '../mail/smuggling.ts';
import { countReceived, withoutAuthResultsOf } from '../mail/trace.ts';
import { applyReport } from '../send/bounces.ts';
import { unsubscribe } from '../send/unsubscribe.ts';
import type { Analyzer } from './analyzer.ts';
import type { AuthVerdicts } from './authenticate.ts';
import { classify, type Category } from './classify.ts';
import { forwardInTransaction } from './forward.ts';
import type { ParsedMessage } from './parse.ts';
import type { Target } from './route.ts';
import { storeReceived, storeReport } from './store.ts';
import { findThread } from './threads.ts';

/** RFC 5321 6.3 leaves the hop limit to the receiver; Postfix and Stalwart use 50. */
export const MAX_RECEIVED = 50;

export interface Envelope {
  sessionId: string;
  ip: string;
  helo: string;
  /** The client's name from its PTR record (through the configured resolvers), when it has one. */
  ptr: string | null;
  tls: boolean;
  mailFrom: string;
  recipients: Array<{ address: string; target: Target }>;
}

/** Checks, authenticates, parses and stores a message; returns the ids it was stored as. */
export async function receive(app: App, analyzer: Analyzer, envelope: Envelope, data: Buffer): Promise<string[]> {
  if (hasSmugglingLookAlike(data)) {
    throw new SmtpError(554, '5.5.2 Message refused: a bare CR or LF around a "." line looks like SMTP smuggling');
  }
  if (countReceived(data) > MAX_RECEIVED) {
    throw new SmtpError(554, `5.4.6 Message refused: more than ${MAX_RECEIVED} Received headers, a mail loop`);
  }

  const { config, log } = app;
  const { verdicts, authHeaders, parsed } = await analyzer.analyze(data, { ip: envelope.ip, helo: envelope.helo, mailFrom: envelope.mailFrom, hostname: config.hostname });
  if (parsed.problem) log.warn('received message stored unparsed in part', { session: envelope.sessionId, problem: parsed.problem });
  const raw = Buffer.concat([Buffer.from(traceFields(app, envelope) + authHeaders, 'latin1'), withoutAuthResultsOf(data, config.hostname)]);

  let forwarded = false;
  const ids = await app.commit.run(() => {
    const stored: string[] = [];
    const inboxes = new Set<string>();
    for (const { target } of envelope.recipients) {
      if (target.kind === 'report') {
        const reportId = storeReport(app.db, app.clock, { workspaceId: target.workspaceId, emailId: target.emailId, mailFrom: envelope.mailFrom, raw });
        // Acted on in the transaction that keeps it: the 250 says both are on disk, and our own fault is a 451.
        applyReport(app, { reportId, workspaceId: target.workspaceId, emailId: target.emailId, report: parsed.report });
        stored.push(reportId);
        continue;
      }
      if (target.kind === 'unsubscribe') {
        // RFC 2369 mailto: the signed address is the whole request; the message itself is not kept.
        unsubscribe(app.db, app.clock, target.token, 'mailto');
        continue;
      }
      const { inbox } = target;
      if (inboxes.has(inbox.id)) continue;
      inboxes.add(inbox.id);
      stored.push(fileForInbox(app, { inbox, parsed, raw, envelopeFrom: envelope.mailFrom, auth: verdicts }, () => (forwarded = true)));
    }
    return stored;
  });
  if (forwarded) app.queue.wake();
  return ids;
}

type InboxTarget = Extract<Target, { kind: 'inbox' }>['inbox'];

/** One inbox's copy: classified by what the workspace knows, threaded, stored and perhaps forwarded. */
function fileForInbox(
  app: App,
  m: { inbox: InboxTarget; parsed: ParsedMessage; raw: Buffer; envelopeFrom: string; auth: AuthVerdicts },
  onForward: () => void,
): string {
  const { db, clock } = app;
  const { inbox, parsed } = m;
  const workspaceId = inbox.workspace_id;
  const from = parsed.fromAll.length === 1 ? parsed.fromAll[0] : null;
  const thread = findThread(db, workspaceId, parsed.inReplyTo, parsed.references);
  const verdict = classify({ from, headers: parsed.headers, auth: m.auth, learned: from ? learnedAbout(app, workspaceId, from.address) : null, replyToSent: thread.replyToSent });
  const { id } = storeReceived(db, clock, {
    workspaceId,
    inboxId: inbox.id,
    inboxAddress: inbox.address,
    domainId: inbox.domain_id,
    domain: inbox.domain_name,
    parsed,
    raw: m.raw,
    envelopeFrom: m.envelopeFrom,
    auth: m.auth,
    verdict,
    threadId: thread.threadId,
  });
  if (verdict.category !== 'spam' && inbox.forward_status === 'active') {
    const copy = forwardInTransaction(app, {
      emailId: id,
      workspaceId,
      inbox,
      from,
      subject: parsed.subject,
      text: parsed.text,
      html: parsed.html,
      attachments: parsed.attachments,
      headers: parsed.headers,
    });
    if (copy) onForward();
  }
  return id;
}

function learnedAbout(app: App, workspaceId: string, address: string): { category: Category | null; important: boolean | null } | null {
  const row = app.db.prepare('SELECT category, important FROM sender_rules WHERE workspace_id = ? AND address = ?').get(workspaceId, address.toLowerCase()) as
    | { category: Category | null; important: number | null }
    | undefined;
  return row ? { category: row.category, important: row.important === null ? null : row.important === 1 } : null;
}

/** Our Received field (RFC 5321 4.4), first in the stored message. */
function traceFields(app: App, e: Envelope): string {
  const from = `${e.helo || 'unknown'} (${e.ptr ?? 'unknown'} [${e.ip}])`;
  const only = e.recipients.length === 1 ? `\r\n\tfor <${e.recipients[0].address}>` : '';
  const date = new Date(app.clock.now()).toUTCString().replace('GMT', '+0000');
  return `Received: from ${from}\r\n\tby ${app.config.hostname} (Mailwright) with ${e.tls ? 'ESMTPS' : 'ESMTP'} id ${e.sessionId}${only};\r\n\t${date}\r\n`;
}
