// Putting mail into labels: by rule as new mail is stored (in the transaction that stores it), by the
// conversation a received reply belongs to, and by hand. An email never carries more than 10 labels (a label
// that would be the 11th is skipped and said so), and a bucket label (skip_inbox, or a rule's skip_inbox)
// archives the received mail it files, so it appears only under the label. Queries for the caller's
// transaction (db/query.ts).
import { column, value, type Query } from '../db/query.ts';
import { archiveReceived, labelIdsOf, setLabelIds } from '../emails/lookup.ts';
import { MAX_LABELS_PER_EMAIL } from './labels.ts';
import { ruleMatches, rulesOfWorkspace, type Rule } from './rules.ts';

export interface Filing {
  labelId: string;
  /** The rule says skip the inbox (the label's own skip_inbox is read here too). */
  skipInbox: boolean;
}

export interface Filed {
  /** The labels the email carries now that it did not before. */
  added: string[];
  /** Labels left out because the email already had 10. */
  capped: string[];
  archived: boolean;
}

/** Adds the filings' labels to the email (never past 10) and archives received mail when one is a bucket. */
export function* fileInto(now: number, workspaceId: string, emailId: string, filings: Filing[]): Query<Filed> {
  const filed: Filed = { added: [], capped: [], archived: false };
  if (filings.length === 0) return filed; // most mail matches no rule: then the email is not read at all
  const current = yield* labelIdsOf(workspaceId, emailId);
  if (current === undefined) return filed;
  const ids = JSON.parse(current) as string[];
  let archive = false;
  for (const f of filings) {
    const bucket = f.skipInbox || (yield* value('SELECT skip_inbox FROM labels WHERE id = ? AND workspace_id = ?', f.labelId, workspaceId)) === 1;
    if (ids.includes(f.labelId)) {
      archive ||= bucket;
      continue;
    }
    if (ids.length >= MAX_LABELS_PER_EMAIL) {
      filed.capped.push(f.labelId);
      continue;
    }
    ids.push(f.labelId);
    filed.added.push(f.labelId);
    archive ||= bucket;
  }
  if (filed.added.length) yield* setLabelIds(emailId, JSON.stringify(ids));
  if (archive) filed.archived = yield* archiveReceived(emailId, now);
  return filed;
}

/**
 * New mail, in the transaction that stores it: every rule of the workspace that matches, and, for received
 * mail that replies in a conversation sent with a bucket label, that label (API-SPEC.md section 3). `rules`: the
 * workspace's, read a moment before the transaction (on PostgreSQL, outside the write lock); read here when absent.
 */
export function* fileNewEmail(now: number, workspaceId: string, emailId: string, reply?: { threadId: string }, rules?: Rule[]): Query<Filed> {
  const filings: Filing[] = [];
  for (const rule of rules ?? (yield* rulesOfWorkspace(workspaceId))) {
    if (yield* ruleMatches(rule, emailId)) filings.push({ labelId: rule.labelId, skipInbox: rule.skipInbox });
  }
  if (reply) {
    const buckets = yield* column<string>(
      `SELECT DISTINCT l.id FROM emails e, json_each(e.labels_json) j JOIN labels l ON l.id = j.value
       WHERE e.workspace_id = ? AND e.thread_id = ? AND e.direction = 'out' AND e.labels_json <> '[]' AND l.skip_inbox = 1`,
      workspaceId,
      reply.threadId,
    );
    for (const labelId of buckets) filings.push({ labelId, skipInbox: true });
  }
  return yield* fileInto(now, workspaceId, emailId, filings);
}
