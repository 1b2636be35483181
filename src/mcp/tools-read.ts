// The tools that read: list and search mail, one email, one thread, the inboxes, the domains and the
// templates. Each answers a trimmed view of the API's record, bounded in size whatever the mail holds: a model
// reads every character it is given.
import { z } from 'zod';
import { htmlToText } from '../mail/compose.ts';
import { mailboxText } from '../mail/addresses.ts';
import { bounded, call, query, seg, tool } from './tool.ts';

/** Emails per list call: enough to choose from, few enough to read (the API allows 100). */
const MAX_LIST = 50;
const EMAIL_TEXT_CHARS = 20_000;
const MAX_EMAIL_TEXT_CHARS = 100_000;
const THREAD_TEXT_CHARS = 2_000;
/** A thread's newest emails shown; older ones are counted. */
const THREAD_EMAILS = 20;

type Person = { name: string | null; address: string };
type Row = Record<string, unknown> & { from: Person; to: Person[]; labels: Array<{ name: string }>; delivery: { state: string } | null };
type Email = Row & { cc: Person[]; replyTo: Person[]; text: string | null; html: string | null; extractedText: string | null; attachments: Array<{ id: string; filename: string; contentType: string; sizeBytes: number }> };

/** As a send's field takes it back (a name with a comma quoted), so an agent can answer to what it read. */
const person = (p: Person) => mailboxText({ name: p.name ?? undefined, address: p.address });
const files = (e: Email) => e.attachments.map((a) => ({ id: a.id, filename: a.filename, contentType: a.contentType, sizeBytes: a.sizeBytes }));
/** The text a person reads: the text part, or the HTML part's words when the mail has only HTML. */
const readable = (e: Email) => e.text ?? (e.html ? htmlToText(e.html) : null);

function summary(e: Row) {
  return {
    id: e.id, threadId: e.threadId, direction: e.direction, from: person(e.from), to: e.to.map(person), subject: e.subject, snippet: e.snippet,
    createdAt: e.createdAt, inboxId: e.inboxId, unread: e.direction === 'in' && e.readAt === null, archived: e.archivedAt !== null,
    category: e.category, labels: e.labels.map((l) => l.name), attachmentCount: e.attachmentCount, delivery: e.delivery?.state ?? null,
  };
}

const page = {
  limit: z.number().int().min(1).max(MAX_LIST).optional().describe(`how many (1-${MAX_LIST}, default 20), newest first`),
  offset: z.number().int().min(0).optional().describe('how many to skip, for the next page'),
};
const filters = {
  inbox_id: z.string().optional().describe('only this inbox (inb_...)'),
  direction: z.enum(['in', 'out']).optional().describe('in: received, out: sent'),
  label: z.string().optional().describe('only mail with this label (name or lbl_ id)'),
  unread: z.boolean().optional().describe('true: received mail not yet read'),
  archived: z.boolean().optional().describe('false: the Inbox view (received, not archived, not spam); true: archived mail'),
  category: z.enum(['primary', 'updates', 'spam']).optional(),
  from: z.string().optional().describe('part of the sender\'s address or name'),
  after: z.string().optional().describe('created on or after (2026-11-21 or an ISO 8601 time)'),
  before: z.string().optional().describe('created before'),
};

async function listed(api: Parameters<typeof call>[0], params: Record<string, string | number | boolean | undefined>) {
  const res = await call(api, 'GET', `/emails${query({ limit: 20, ...params })}`);
  return { count: res.count, hasMore: res.hasMore, emails: (res.data as Row[]).map(summary) };
}

export const READ_TOOLS = [
  tool({
    name: 'list_emails',
    title: 'List emails',
    description: 'List sent and received emails, newest first, with filters. Each item is a summary (sender, subject, snippet, labels); read one with get_email.',
    input: z.object({ ...filters, ...page }).strict(),
    routes: ['GET /emails'],
    readOnly: true,
    run: (api, args) => listed(api, args),
  }),
  tool({
    name: 'search_emails',
    title: 'Search emails',
    description:
      'Full-text search over subjects, bodies, names, addresses and attachment names, newest first. Understands Gmail\'s operators: from:, to:, subject:, has:attachment, filename:, label:, in:inbox|sent|archive|spam|trash, is:unread, after:2026-11-01, before:, "exact phrase", -word.',
    input: z.object({ query: z.string().min(1).max(1000).describe('the search, e.g. from:alice has:attachment invoice'), inbox_id: filters.inbox_id, ...page }).strict(),
    routes: ['GET /emails'],
    readOnly: true,
    run: (api, args) => listed(api, args),
  }),
  tool({
    name: 'get_email',
    title: 'Read an email',
    description:
      'One email whole: headers, its text (the HTML\'s words when it has no text part), extractedText (a received reply\'s new text without the quoted history and signature), its attachments listed, and for sent mail the delivery state.',
    input: z.object({ id: z.string().min(1).describe('the email id (em_...)'), max_chars: z.number().int().min(100).max(MAX_EMAIL_TEXT_CHARS).optional().describe(`longest text returned (default ${EMAIL_TEXT_CHARS})`) }).strict(),
    routes: ['GET /emails/:id'],
    readOnly: true,
    run: async (api, args) => {
      const e = (await call(api, 'GET', `/emails/${seg(args.id)}`)) as Email;
      const max = args.max_chars ?? EMAIL_TEXT_CHARS;
      const text = bounded(readable(e), max);
      return {
        ...summary(e), cc: e.cc.map(person), replyTo: e.replyTo.map(person), messageId: e.messageId, inReplyTo: e.inReplyTo, readAt: e.readAt,
        text: text.text, textTruncated: text.truncated, extractedText: bounded(e.extractedText, max).text, attachments: files(e),
        ...(e.direction === 'out' ? { recipients: e.recipients } : { spamScore: (e.spam as { score?: number } | null)?.score ?? null }),
      };
    },
  }),
  tool({
    name: 'get_thread',
    title: 'Read a thread',
    description: `A conversation in order, oldest first: each email's sender, time and new text (a received reply's quoted history left out), at most ${THREAD_TEXT_CHARS} characters each, the newest ${THREAD_EMAILS} emails.`,
    input: z.object({ id: z.string().min(1).describe('the thread id (thr_..., an email\'s threadId)') }).strict(),
    routes: ['GET /threads/:id'],
    readOnly: true,
    run: async (api, args) => {
      const res = await call(api, 'GET', `/threads/${seg(args.id)}`);
      const all = res.data as Email[];
      const shown = all.slice(-THREAD_EMAILS);
      return {
        id: res.id, count: all.length, olderNotShown: all.length - shown.length,
        emails: shown.map((e) => ({ ...summary(e), text: bounded(e.extractedText ?? readable(e), THREAD_TEXT_CHARS).text, attachments: files(e) })),
      };
    },
  }),
  tool({
    name: 'list_inboxes',
    title: 'List inboxes',
    description: 'The inboxes this key reaches: their id, address, name and whether they receive mail yet.',
    input: z.object({}).strict(),
    routes: ['GET /inboxes'],
    readOnly: true,
    run: async (api) => {
      const res = await call(api, 'GET', '/inboxes?limit=100');
      return { count: res.count, inboxes: (res.data as Array<Record<string, unknown>>).map((i) => ({ id: i.id, address: i.address, name: i.name, domainId: i.domainId, receiving: i.receiving, receivingStatus: i.receivingStatus })) };
    },
  }),
  tool({
    name: 'list_domains',
    title: 'List domains',
    description: 'The workspace\'s domains: id, name, whether they are verified to send, and what their DNS setup still needs.',
    input: z.object({}).strict(),
    routes: ['GET /domains'],
    readOnly: true,
    run: async (api) => {
      const res = await call(api, 'GET', '/domains?limit=100');
      return { count: res.count, domains: (res.data as Array<Record<string, unknown>>).map((d) => ({ id: d.id, name: d.name, status: d.status, setupStatus: d.setup_status })) };
    },
  }),
  tool({
    name: 'list_templates',
    title: 'List templates',
    description: 'The active email templates: id, key, name and the variables their published version takes, for send_email\'s template.',
    input: z.object({ query: z.string().max(200).optional().describe('part of a template\'s name or key') }).strict(),
    routes: ['GET /templates', 'GET /templates/:id'],
    readOnly: true,
    run: async (api, args) => {
      const res = await call(api, 'GET', `/templates${query({ lifecycle: 'active', query: args.query })}`);
      const list = (res.data as Array<{ id: string; key: string | null; name: string; activeVersionId: string | null }>).slice(0, MAX_LIST);
      const templates = [];
      for (const t of list) {
        const one = t.activeVersionId ? await call(api, 'GET', `/templates/${seg(t.id)}`) : null;
        const version = one?.activeVersion as { subjectTemplate?: string; variables?: unknown } | null | undefined;
        templates.push({ id: t.id, key: t.key, name: t.name, published: Boolean(version), subject: version?.subjectTemplate ?? null, variables: version?.variables ?? [] });
      }
      return { count: res.count, templates };
    },
  }),
];
