// The tools that act: send (or send by template), reply, save a reply as a draft for a person, forward, and
// file one email (labels, archive, spam, read). Each is one API request under the API's field names.
import { z } from 'zod';
import { call, seg, tool } from './tool.ts';

const addresses = z.union([z.string(), z.array(z.string()).max(50)]);
const id = z.string().min(1).describe('the email id (em_...)');
const body = {
  text: z.string().optional().describe('the plain-text body'),
  html: z.string().optional().describe('the HTML body'),
};
const copies = {
  cc: addresses.optional(),
  bcc: addresses.optional(),
};

/** What a send answers, and where to see how it goes. */
const sent = (res: Record<string, unknown>) => ({ ...res, next: 'get_email with this id shows each recipient\'s delivery state' });

/** A retried call with the same key sends once (the API's Idempotency-Key, kept 24 hours). */
const once = { idempotency_key: z.string().min(1).max(256).optional().describe('any unique string: a retry with the same key and arguments sends once') };
const keyed = (key: string | undefined) => (key === undefined ? undefined : { 'idempotency-key': key });

export const ACT_TOOLS = [
  tool({
    name: 'send_email',
    title: 'Send an email',
    description:
      'Send an email from one of the workspace\'s verified domains (the key may limit which). Give text and/or html, or a template (list_templates) with its variables. scheduled_at sends it later.',
    input: z
      .object({
        from: z.string().describe('the sender, a@example.com or Name <a@example.com>'),
        to: addresses.describe('one address or a list'),
        ...copies,
        reply_to: addresses.optional(),
        subject: z.string().max(998).optional(),
        ...body,
        template: z
          .object({ id: z.string().optional().describe('tmpl_... id'), key: z.string().optional().describe('or the template\'s key'), variables: z.record(z.string(), z.unknown()).optional() })
          .strict()
          .optional()
          .describe('send by template instead of subject, text and html'),
        labels: z.array(z.string()).max(20).optional(),
        in_reply_to: z.string().optional().describe('an email id or Message-ID this answers, to thread with it'),
        scheduled_at: z.string().optional().describe('ISO 8601 time with an offset, e.g. 2026-12-01T09:00:00Z'),
        ...once,
      })
      .strict(),
    routes: ['POST /emails'],
    destructive: true,
    run: async (api, { idempotency_key, ...args }) => sent(await call(api, 'POST', '/emails', args, keyed(idempotency_key))),
  }),
  tool({
    name: 'reply_to_email',
    title: 'Reply to an email',
    description:
      'Send a reply to one email: from the inbox it came to, to its sender (reply_all: also its other recipients), Re: subject, the original quoted below, threaded with it.',
    input: z.object({ id, ...body, reply_all: z.boolean().optional(), ...copies, ...once }).strict(),
    routes: ['POST /emails/:id/reply'],
    destructive: true,
    run: async (api, { id: email, idempotency_key, ...rest }) => sent(await call(api, 'POST', `/emails/${seg(email)}/reply`, rest, keyed(idempotency_key))),
  }),
  tool({
    name: 'draft_reply',
    title: 'Draft a reply',
    description:
      'Write a reply to one email without sending it: it is saved as a draft, addressed, quoted and threaded, for a person to read over and send from the dashboard. Answers the draft.',
    input: z.object({ id, ...body, reply_all: z.boolean().optional(), ...copies }).strict(),
    routes: ['POST /emails/:id/reply', 'POST /drafts'],
    run: async (api, { id: email, ...rest }) => call(api, 'POST', `/emails/${seg(email)}/reply`, { ...rest, draft: true }),
  }),
  tool({
    name: 'forward_email',
    title: 'Forward an email',
    description: 'Forward one email with its attachments to new recipients, with an optional note above it; Fwd: subject, threaded with the original.',
    input: z.object({ id, to: addresses.describe('who gets it'), ...body, ...copies, ...once }).strict(),
    routes: ['POST /emails/:id/forward'],
    destructive: true,
    run: async (api, { id: email, idempotency_key, ...rest }) => sent(await call(api, 'POST', `/emails/${seg(email)}/forward`, rest, keyed(idempotency_key))),
  }),
  tool({
    name: 'label_email',
    title: 'Label an email',
    description: 'Add labels to one email and remove others (names, or lbl_ ids); a label added that does not exist yet is created.',
    input: z.object({ id, add: z.array(z.string()).max(100).optional(), remove: z.array(z.string()).max(100).optional() }).strict(),
    routes: ['POST /emails/:id/labels'],
    run: async (api, { id: email, ...change }) => call(api, 'POST', `/emails/${seg(email)}/labels`, change),
  }),
  filing('archive_email', 'Archive an email', 'Move one email out of the Inbox view into the archive (archived: false puts it back).', 'archived', (on) => ({ archived: on })),
  filing('mark_spam', 'Mark as spam', 'File one received email as spam, which teaches the filter (spam: false files it back in the Inbox as not spam).', 'spam', (on) => ({ category: on ? 'spam' : 'primary' })),
  filing('mark_read', 'Mark as read', 'Mark one received email read (read: false marks it unread again).', 'read', (on) => ({ read: on })),
];

/** A tool that files one email by one switch of PATCH /emails/:id, on unless the caller says false. */
function filing(name: string, title: string, description: string, flag: string, patch: (on: boolean) => Record<string, unknown>) {
  return tool({
    name, title, description,
    input: z.object({ id, [flag]: z.boolean().optional().describe('default true') }).strict(),
    routes: ['PATCH /emails/:id'],
    run: async (api, args) => filed(await call(api, 'PATCH', `/emails/${seg(args.id as string)}`, patch((args as Record<string, unknown>)[flag] !== false))),
  });
}

/** Where an email stands after filing it: not the whole record again. */
const filed = (e: Record<string, unknown>) => ({ id: e.id, readAt: e.readAt, archivedAt: e.archivedAt, category: e.category, labels: (e.labels as Array<{ name: string }> | undefined)?.map((l) => l.name) });
