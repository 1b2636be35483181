// Where a recipient of an incoming SMTP transaction goes, decided at RCPT time: an active inbox on a domain
// whose inbound setup is `ready`, a VERP bounce address of mail the box sent, or the mailto unsubscribe address
// in such mail. Anything else is refused with the reply a user expects; a domain that is not ours is relaying
// and always refused (never an open relay: `%`, `!`, quoted and source-routed forms never name an inbox,
// whose local parts are dot-atoms). An inbox whose workspace has the envelope sender on its block list refuses
// it here (filter/lists.ts): the sender learns at once, and nothing is stored. The report addresses on a
// return path (dns/records.ts: dmarc-reports@, tls-reports@) take reports for any domain row the box has.
import { readBoxSecret } from '../db/box-secret.ts';
import { all, get, type Query } from '../db/query.ts';
import { SmtpError } from '../errors.ts';
import { parseVerp } from '../feedback/verp.ts';
import { unsubscribeAddressToken } from '../feedback/unsubscribe.ts';
import type { InboxRow } from '../inboxes/inboxes.ts';
import { HOLDER, holderNames, holderOf } from '../domains/claims.ts';
import { sentEmailWorkspace } from '../emails/lookup.ts';
import { matchSender } from '../filter/lists.ts';
import { DMARC_REPORTS_LOCAL_PART, TLS_REPORTS_LOCAL_PART } from '../dns/records.ts';
import type { ReportFormat } from '../mail/received-report.ts';

export type Target =
  | { kind: 'inbox'; inbox: InboxRow & { domain_name: string } }
  | { kind: 'report'; emailId: string; workspaceId: string }
  | { kind: 'unsubscribe'; token: string }
  | { kind: 'aggregate'; format: ReportFormat; workspaceId: string; domainId: string; domain: string };

/**
 * The target of `address` for mail from `mailFrom` (the envelope sender), or an SmtpError with the RCPT reply.
 * A query (db/query.ts).
 */
export function* routeRecipient(address: string, mailFrom = ''): Query<Target> {
  const lower = address.toLowerCase();
  const at = lower.lastIndexOf('@');
  const domain = at > 0 ? lower.slice(at + 1) : '';

  // The inbox, and the workspace holding its domain, in one read (on PostgreSQL each statement is a round trip).
  const found = yield* get<InboxRow & { domain_name: string; inbound_status: string; holder_workspace_id: string | null }>(
    `SELECT i.*, d.name AS domain_name, d.inbound_status AS inbound_status, (${HOLDER('workspace_id')}) AS holder_workspace_id
     FROM inboxes i JOIN domains d ON d.id = i.domain_id WHERE i.address = ?`,
    holderNames(domain),
    lower,
  );
  // Only the workspace holding the domain receives for it (domains/claims.ts): an inbox on an overlapping
  // domain row that predates the rule is passed over, as if it did not exist.
  if (found && found.inbound_status === 'ready' && found.holder_workspace_id === found.workspace_id) {
    const { holder_workspace_id: _, ...inbox } = found;
    if (inbox.status !== 'active') throw new SmtpError(550, `5.2.1 <${address}>: Mailbox disabled, not accepting messages`);
    yield* refuseBlockedSender(inbox.workspace_id, address, mailFrom);
    return { kind: 'inbox', inbox };
  }

  if (yield* get('SELECT 1 FROM domains WHERE return_path = ? LIMIT 1', domain)) {
    const report = yield* reportTarget(lower.slice(0, at), domain);
    if (report) return report;
    const secret = yield* readBoxSecret();
    const emailId = parseVerp(secret, lower);
    const workspaceId = emailId && (yield* sentEmailWorkspace(emailId));
    if (emailId && workspaceId) return { kind: 'report', emailId, workspaceId };
    const token = yield* unsubscribeAddressToken(secret, lower);
    if (token) return { kind: 'unsubscribe', token };
    throw new SmtpError(550, `5.1.1 <${address}>: No such bounce address`);
  }

  if (yield* get("SELECT 1 FROM domains WHERE name = ? AND inbound_status = 'ready' LIMIT 1", domain)) {
    throw new SmtpError(550, `5.1.1 <${address}>: Recipient address rejected: no such mailbox`);
  }
  throw new SmtpError(554, `5.7.1 <${address}>: Relay access denied`);
}

const REPORT_FORMATS: Record<string, ReportFormat> = { [DMARC_REPORTS_LOCAL_PART]: 'dmarc', [TLS_REPORTS_LOCAL_PART]: 'tls' };

/** A report address on a return path: the domain row that holds the name (any status), or null. */
function* reportTarget(local: string, returnPath: string): Query<Target | null> {
  const format = REPORT_FORMATS[local];
  if (!format) return null;
  const rows = yield* all<{ id: string; workspace_id: string; name: string }>('SELECT id, workspace_id, name FROM domains WHERE return_path = ?', returnPath);
  const holder = rows.length ? yield* holderOf(rows[0].name) : null;
  const row = rows.find((r) => r.id === holder?.id) ?? rows.find((r) => r.workspace_id === holder?.workspace_id);
  return row ? { kind: 'aggregate', format, workspaceId: row.workspace_id, domainId: row.id, domain: row.name } : null;
}

/**
 * RFC 5321 3.3 lets a server refuse a recipient for policy; RFC 3463 5.7.1: delivery not authorized. Only the
 * envelope sender is known at RCPT: a From on the block list is filed as spam instead (receive/spam.ts). The
 * null sender (bounces) is never refused here.
 */
function* refuseBlockedSender(workspaceId: string, address: string, mailFrom: string): Query<void> {
  if (!mailFrom) return;
  const entry = yield* matchSender(workspaceId, mailFrom);
  if (entry?.list !== 'block') return;
  throw new SmtpError(550, `5.7.1 <${address}>: The recipient does not accept mail from ${entry.kind === 'address' ? `<${entry.entry}>` : `senders at ${entry.entry}`}`);
}
