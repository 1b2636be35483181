// What the mailbox pages share: the shapes GET /emails and GET /labels answer with, and the views, each a
// filter of GET /emails.
export interface Person {
  name: string | null;
  address: string;
}
export interface Summary {
  id: string;
  threadId: string;
  direction: 'in' | 'out';
  status: string;
  /** A scheduled send: when it goes. */
  scheduledAt: string | null;
  from: Person;
  to: Person[];
  subject: string;
  snippet: string;
  /** Received mail: the new text without quoted history and signature; null for sent and older mail. */
  extractedText?: string | null;
  createdAt: string;
  category: string | null;
  important: boolean;
  readAt: string | null;
  archivedAt: string | null;
  trashedAt: string | null;
  labels: Array<{ id: string; name: string; color: string }>;
  attachmentCount: number;
  /** Sent mail: where its recipients stand (the worst state first); null for received mail. */
  delivery?: DeliverySummary | null;
}
export type RecipientState = 'scheduled' | 'queued' | 'sending' | 'delivered' | 'delayed' | 'bounced' | 'suppressed' | 'failed' | 'complained' | 'canceled';
export interface DeliverySummary {
  state: RecipientState;
  counts: Partial<Record<RecipientState, number>>;
}
export interface RecipientDelivery {
  email: string;
  state: RecipientState;
  at: string;
  detail: { code: number | null; response: string | null; nextAttemptAt: string | null; attempts: number; mx: string | null; reason: string | null };
}
export interface Email extends Summary {
  cc: Person[];
  text: string | null;
  html: string | null;
  classification: string | null;
  messageId: string;
  authentication: Record<'spf' | 'dkim' | 'dmarc' | 'arc', { result: string; domain?: string | null } | undefined> | null;
  attachments: Array<{ id: string; filename: string; contentType: string; sizeBytes: number }>;
  /** Sent mail: a line per recipient; null for received mail. */
  recipients: RecipientDelivery[] | null;
}
export interface Label {
  id: string;
  name: string;
  color: string;
  skipInbox: boolean;
  unreadCount: number;
  totalCount: number;
}

// Each view is a filter of GET /emails.
export const VIEWS: Record<string, { title: string; params: Record<string, string> }> = {
  inbox: { title: 'Inbox', params: { direction: 'in', archived: 'false', category: 'primary' } },
  updates: { title: 'Updates', params: { direction: 'in', archived: 'false', category: 'updates' } },
  spam: { title: 'Spam', params: { direction: 'in', category: 'spam', include_spam: 'true' } },
  important: { title: 'Important', params: { important: 'true', archived: 'false' } },
  archive: { title: 'Archive', params: { archived: 'true' } },
  sent: { title: 'Sent', params: { direction: 'out' } },
  scheduled: { title: 'Scheduled', params: { status: 'scheduled' } },
  // Everything moved to the Trash, spam too (a list leaves spam out unless asked).
  trash: { title: 'Trash', params: { trashed: 'true', include_spam: 'true' } },
};

export const who = (p: Person) => p.name || p.address;

/** The folder an email is in, named as the sidebar names it (the view that lists it; Trash before all). */
export function folderOf(e: Pick<Summary, 'trashedAt' | 'status' | 'direction' | 'category' | 'archivedAt'>): string {
  if (e.trashedAt) return 'Trash';
  if (e.direction === 'out') return e.status === 'scheduled' ? 'Scheduled' : 'Sent';
  if (e.category === 'spam') return 'Spam';
  if (e.archivedAt) return 'Archive';
  return e.category === 'updates' ? 'Updates' : 'Inbox';
}
export const senderKey = (address: string) => `mailwright.images.${address.toLowerCase()}`;
