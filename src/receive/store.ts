// Writes one received message for one inbox: the email row, its bodies and raw bytes, its attachments, its
// full-text row and its `received` event. Synchronous SQL meant to run inside the receive transaction (group
// commit), so a message is stored whole or not at all; it decides nothing.
import type { Clock } from '../clock.ts';
import type { Db } from '../db/open.ts';
import { newId } from '../db/ids.ts';
import { addEvent } from '../emails/events.ts';
import { indexEmail, nextSearchRowid, previewOf } from '../emails/search-index.ts';
import type { AuthVerdicts } from './authenticate.ts';
import type { Classification } from './classify.ts';
import type { ParsedMessage } from './parse.ts';

export interface ReceivedCopyRow {
  workspaceId: string;
  inboxId: string;
  inboxAddress: string;
  domainId: string;
  domain: string;
  parsed: ParsedMessage;
  /** The message as stored: our trace fields, then the bytes as received. */
  raw: Buffer;
  envelopeFrom: string;
  auth: AuthVerdicts;
  verdict: Classification;
  threadId: string | null;
}

export function storeReceived(db: Db, clock: Clock, m: ReceivedCopyRow): { id: string; threadId: string } {
  const now = clock.now();
  const id = newId('em', now);
  const threadId = m.threadId ?? id;
  const p = m.parsed;
  const from = p.fromAll[0] ?? { name: '', address: m.envelopeFrom || '' };
  const text = p.text ?? '';
  const searchRowid = nextSearchRowid(db, now);

  db.prepare(
    `INSERT INTO emails (id, workspace_id, direction, status, domain_id, domain, inbox_id, message_id, thread_id, in_reply_to, refs,
       from_address, from_name, to_json, cc_json, reply_to_json, subject, envelope_from, size,
       category, important, classification, authentication, preview, search_rowid, created_at)
     VALUES (?, ?, 'in', 'received', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id, m.workspaceId, m.domainId, m.domain, m.inboxId, p.messageId ?? `${id.slice(3).toLowerCase()}@received.invalid`, threadId, p.inReplyTo,
    JSON.stringify(p.references), from.address, from.name || null, JSON.stringify(p.to), JSON.stringify(p.cc), JSON.stringify(p.replyTo),
    p.subject, m.envelopeFrom, m.raw.length, m.verdict.category, m.verdict.important ? 1 : 0, m.verdict.classification,
    JSON.stringify(m.auth), previewOf(text), searchRowid, now,
  );
  db.prepare('INSERT INTO email_contents (email_id, text_body, html_body, raw) VALUES (?, ?, ?, ?)').run(id, p.text, p.html, m.raw);
  const attachment = db.prepare(
    'INSERT INTO email_attachments (id, email_id, workspace_id, position, filename, content_type, content_id, size, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  p.attachments.forEach((a, i) => attachment.run(newId('att', now), id, m.workspaceId, i, a.filename, a.contentType, a.contentId ?? null, a.content.length, a.content));
  indexEmail(db, searchRowid, {
    workspaceId: m.workspaceId,
    subject: p.subject,
    body: text,
    from,
    recipients: [...p.to, ...p.cc],
    others: [...p.fromAll.slice(1), ...p.replyTo],
    attachments: p.attachments.map((a) => a.filename),
  });
  addEvent(db, clock, { workspaceId: m.workspaceId, emailId: id, type: 'received', recipient: m.inboxAddress, data: { from: from.address, size: m.raw.length } });
  return { id, threadId };
}

/** Mail to a VERP bounce address: kept as received for the bounce processing to read. */
export function storeReport(db: Db, clock: Clock, r: { workspaceId: string; emailId: string; mailFrom: string; raw: Buffer }): string {
  const id = newId('rpt', clock.now());
  db.prepare('INSERT INTO inbound_reports (id, workspace_id, email_id, mail_from, raw, received_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    id, r.workspaceId, r.emailId, r.mailFrom, r.raw, clock.now(),
  );
  return id;
}
