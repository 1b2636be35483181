// The body of a webhook delivery and of a live-stream message, the same for both: `{type, created_at, data}`
// (DESIGN.md) with `data.email`, the email's summary, and `data.event`, the event as GET /emails/:id/events
// shows it. A received email also carries what an app needs to act without a second call.
import type { Query } from '../db/query.ts';
import { webhookEventType, type EventOfWorkspace } from '../emails/events.ts';
import { getEmail } from '../emails/mailbox.ts';

export interface Payload {
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

const apiLink = (publicUrl: string, path: string) => `${publicUrl.replace(/\/+$/, '')}/api/v1${path}`;

export function* emailSummary(publicUrl: string, workspaceId: string, emailId: string, received: boolean): Query<Record<string, unknown> | null> {
  const e = yield* getEmail(workspaceId, emailId, { recipients: false });
  if (!e) return null;
  const summary: Record<string, unknown> = {
    id: e.id,
    direction: e.direction,
    from: e.from,
    to: e.to,
    subject: e.subject,
    createdAt: e.createdAt,
    status: e.status,
    threadId: e.threadId,
    inboxId: e.inboxId,
    labels: e.labels,
  };
  if (!received) return summary;
  return {
    ...summary,
    cc: e.cc,
    replyTo: e.replyTo,
    messageId: e.messageId,
    inReplyTo: e.inReplyTo,
    text: e.text,
    snippet: e.snippet,
    extractedText: e.extractedText,
    category: e.category,
    important: e.important,
    attachments: e.attachments,
    authentication: e.authentication,
    links: { self: apiLink(publicUrl, `/emails/${e.id}`), raw: apiLink(publicUrl, `/emails/${e.id}/raw`) },
  };
}

export function* eventPayload(publicUrl: string, { workspaceId, event }: Pick<EventOfWorkspace, 'workspaceId' | 'event'>): Query<Payload> {
  return payloadOf(event, yield* emailSummary(publicUrl, workspaceId, event.emailId, event.type === 'received'));
}

/** An event's payload, given its email's summary (emailSummary of its email, `received` for a received event). */
export const payloadOf = (event: EventOfWorkspace['event'], email: Record<string, unknown> | null): Payload => ({
  type: webhookEventType(event.type),
  created_at: event.createdAt,
  data: { email, event },
});
