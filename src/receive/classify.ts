// Classifies a received message: its category (primary, updates, spam), whether it is important, and the
// human-readable reason shown to the owner. Pure: it reads header fields, authentication verdicts and what the
// owner taught the box about the sender (the sender_rules row); no database, no sockets, no parsing.
//
// Category, first rule that applies wins (docs/receiving.md, "How received mail is classified"):
// 0. The spam filter's outright rules (filter/combine.ts judge): GTUBE, then the owner's block list -> spam.
// 1. Learned category for the sender: spam -> spam; primary or updates -> that category, overriding every
//    automatic check below, spam included (the reason then names the check it overrode).
// 2. Automatic spam: DMARC fail because the message has no From or several (auth.dmarc.reason); DMARC fail
//    under p=reject or p=quarantine (p=none is not spam); SPF fail (not softfail) with no DKIM pass. The
//    owner's allow list does not override these: they say the From may be forged.
// 2b. The spam filter's score (content, the door's evidence, reputation) at or over its threshold -> spam,
//    unless the allow list covers the sender; when the allow list or the sender's history kept mail out of
//    Spam that the score alone would have put there, the reason says so.
// 3. Updates: Auto-Submitted other than `no` (or X-Autoreply / X-Autorespond); List-Unsubscribe,
//    List-Unsubscribe-Post or List-Id; Precedence bulk, list or junk; a bulk-sender header (BULK_SENDER_HEADERS);
//    a no-reply From address (NO_REPLY_NAMES). Checked in that order; the reason names the first found.
// 4. Otherwise primary.
// Important: the learned importance when set; otherwise a reply to mail the workspace sent; otherwise not.
// A spam message is never important.
import type { HeaderFields } from '../mail/headers.ts';
import type { AuthVerdicts } from './authenticate.ts';
import type { Category } from '../emails/rows.ts';
import type { Judgement, SpamRecord } from '../filter/combine.ts';
import type { Signal } from '../filter/signals.ts';

export type { Category };

export interface ClassifyInput {
  /** The single From mailbox (address lower-cased), or null when the message has none or several. */
  from: { address: string; name: string } | null;
  headers: HeaderFields;
  auth: AuthVerdicts;
  /** What the owner taught the box about this sender (the sender_rules row), or null. */
  learned: { category: Category | null; important: boolean | null } | null;
  /** In-Reply-To or References names a message this workspace sent. */
  replyToSent: boolean;
  /** The spam filter's judgement (filter/combine.ts), when it was asked. */
  filter?: Judgement | null;
}

export interface Classification {
  category: Category;
  important: boolean;
  classification: string;
  /** The email record's `spam`, the deciding rule's signal first; left out when the filter was not asked. */
  spam?: SpamRecord;
}

/** RFC 2369 and RFC 8058 list fields, named in this order in the reason. */
const LIST_HEADERS = ['List-Unsubscribe', 'List-Unsubscribe-Post', 'List-Id'];

/** RFC 3834 2: mail from an automatic process carries Auto-Submitted (any value but `no`); the X- fields are
 * the de-facto auto-responder markers that predate it. */
const AUTOMATED_HEADERS = ['X-Autoreply', 'X-Autorespond'];

/** RFC 3834 2: the Precedence values that mark bulk or list mail. */
const BULK_PRECEDENCE = ['bulk', 'list', 'junk'];

/** Fields that bulk-sending platforms add; a name ending in `*` matches every field that starts with it. */
const BULK_SENDER_HEADERS: ReadonlyArray<{ name: string; platform?: string }> = [
  { name: 'X-MC-User', platform: 'Mailchimp' },
  { name: 'X-Mandrill-User', platform: 'Mandrill' },
  { name: 'X-Mailgun-*', platform: 'Mailgun' },
  { name: 'X-SG-EID', platform: 'SendGrid' },
  { name: 'X-SES-Outgoing', platform: 'Amazon SES' },
  { name: 'X-MJ-Mid', platform: 'Mailjet' },
  { name: 'X-PM-Message-Id', platform: 'Postmark' },
  { name: 'X-SFMC-Stack', platform: 'Salesforce Marketing Cloud' },
  { name: 'X-MSFBL', platform: 'SparkPost' },
  { name: 'Feedback-ID' }, // Gmail's feedback loop identifier, set by most bulk senders
  { name: 'X-CSA-Complaints' }, // Certified Senders Alliance
  { name: 'X-Campaign*' }, // X-Campaign, X-CampaignID, X-Campaign-Id
  { name: 'X-Report-Abuse' },
];

/** A From local part is a no-reply address when a run of its words (split at `-`, `_` or `.`, after any `+tag`
 * is dropped) spells one of these: no-reply, do_not_reply, billing.noreply, MAILER-DAEMON. */
const NO_REPLY_NAMES = new Set(['noreply', 'donotreply', 'dontreply', 'mailerdaemon']);

const PERSONAL = 'Personal mail: no newsletter, bulk or automated signs';

export function classify(input: ClassifyInput): Classification {
  const { category, reason, rule } = categorize(input);
  const record = input.filter?.record;
  const spam = record && { spam: rule ? { ...record, signals: [rule, ...record.signals] } : record };
  if (category === 'spam') return { category, important: false, classification: reason, ...spam };
  const { important, why } = importance(input);
  return { category, important, classification: why ? `${reason}; ${why}` : reason, ...spam };
}

/** `rule`: the signal of a rule that decided before the filter's score (an SPF or DMARC failure, a sender rule). */
function categorize(input: ClassifyInput): { category: Category; reason: string; rule?: Signal } {
  const filter = input.filter ?? null;
  if (filter?.gtube) return { category: 'spam', reason: filter.gtube };
  if (filter?.blocked) return { category: 'spam', reason: filter.blocked };
  const spam = spamReason(input.auth);
  const learned = input.learned?.category ?? null;
  if (learned === 'spam') return { category: 'spam', reason: 'You marked this sender as spam', rule: { kind: 'sender', detail: 'You marked this sender as spam', weight: 1 } };
  if (learned) {
    const overridden = spam ?? filter?.spam ?? null;
    return { category: learned, reason: learnedReason(learned, overridden), rule: { kind: 'sender', detail: overridden ? 'You marked this sender as not spam' : `You moved this sender to ${learned === 'primary' ? 'Primary' : 'Updates'}`, weight: 0 } };
  }
  if (spam) return { category: 'spam', reason: spam, rule: { kind: 'auth', detail: spam, weight: 1 } };
  if (filter?.spam) return { category: 'spam', reason: filter.spam };
  const note = filter?.keptOut ? `; ${filter.keptOut}` : '';
  const updates = updatesReason(input.headers, input.from);
  if (updates) return { category: 'updates', reason: updates + note };
  return { category: 'primary', reason: PERSONAL + note };
}

function learnedReason(category: 'primary' | 'updates', overriddenSpam: string | null): string {
  if (!overriddenSpam) return category === 'primary' ? 'You moved this sender to Primary' : 'You moved this sender to Updates';
  const marked = category === 'primary' ? 'You marked this sender as not spam' : 'You marked this sender as not spam and moved it to Updates';
  return `${marked}, overriding: ${overriddenSpam}`;
}

function spamReason(auth: AuthVerdicts): string | null {
  const { dmarc, spf, dkim } = auth;
  if (dmarc.result === 'fail') {
    if (dmarc.reason) return `Message has ${dmarc.reason}: treated as a DMARC failure`;
    const policy = dmarc.policy?.toLowerCase();
    if (policy === 'reject' || policy === 'quarantine') return `DMARC failed for ${dmarc.domain ?? 'the From domain'} (p=${policy})`;
  }
  if (spf.result === 'fail' && dkim.result !== 'pass') return `SPF failed for ${spf.domain ?? 'the sender'} and no valid DKIM signature`;
  return null;
}

function updatesReason(headers: HeaderFields, from: ClassifyInput['from']): string | null {
  return automatedReason(headers) ?? listReason(headers) ?? precedenceReason(headers) ?? bulkSenderReason(headers) ?? noReplyReason(from);
}

function automatedReason(headers: HeaderFields): string | null {
  // RFC 3834 5.1: the value is a keyword, optionally followed by parameters after `;`.
  const submitted = values(headers, 'Auto-Submitted').map((v) => v.split(';')[0]!.trim().toLowerCase()).find((v) => v && v !== 'no');
  if (submitted) return `Automated: Auto-Submitted: ${submitted}`;
  const marker = AUTOMATED_HEADERS.find((name) => has(headers, name));
  return marker ? `Automated: has ${marker}` : null;
}

function listReason(headers: HeaderFields): string | null {
  const found = LIST_HEADERS.filter((name) => has(headers, name));
  if (!found.length) return null;
  const kind = has(headers, 'List-Post') ? 'Mailing list' : 'Newsletter';
  return `${kind}: has ${joinAnd(found)}`;
}

function precedenceReason(headers: HeaderFields): string | null {
  const precedence = values(headers, 'Precedence').map((v) => v.trim().toLowerCase()).find((v) => BULK_PRECEDENCE.includes(v));
  return precedence ? `Bulk mail: Precedence: ${precedence}` : null;
}

function bulkSenderReason(headers: HeaderFields): string | null {
  const names = Object.keys(headers);
  const found = BULK_SENDER_HEADERS.find(({ name }) => {
    const lower = name.toLowerCase();
    return lower.endsWith('*') ? names.some((n) => n.startsWith(lower.slice(0, -1))) : has(headers, name);
  });
  if (!found) return null;
  return found.platform ? `Bulk mail: sent through ${found.platform} (${found.name})` : `Bulk mail: has ${found.name}`;
}

function noReplyReason(from: ClassifyInput['from']): string | null {
  return from && isNoReply(from.address) ? `Sent from a no-reply address: ${from.address}` : null;
}

function isNoReply(address: string): boolean {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase().split('+')[0]!;
  const words = local.split(/[-_.]+/);
  for (let start = 0; start < words.length; start++) {
    for (let end = start + 1; end <= words.length; end++) if (NO_REPLY_NAMES.has(words.slice(start, end).join(''))) return true;
  }
  return false;
}

function importance(input: ClassifyInput): { important: boolean; why: string | null } {
  const learned = input.learned?.important ?? null;
  if (learned !== null) return { important: learned, why: learned ? 'you marked this sender as important' : 'you marked this sender as not important' };
  if (input.replyToSent) return { important: true, why: 'important because it replies to mail you sent' };
  return { important: false, why: null };
}

function values(headers: HeaderFields, name: string): string[] {
  return headers[name.toLowerCase()] ?? [];
}

function has(headers: HeaderFields, name: string): boolean {
  return values(headers, name).length > 0;
}

function joinAnd(items: string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
