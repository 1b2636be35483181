// What the Developers pages read from the API (keys, webhooks and their deliveries, suppressions, an email's
// events), and how each state is shown: its badge tone and words.
import type { Tone } from '../../components/feedback.tsx';

export type KeyPermission = 'full_access' | 'sending_access' | 'inbox_access';
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  permission: KeyPermission;
  domainId: string | null;
  inboxIds: string[] | null;
  createdAt: string;
  lastUsedAt: string | null;
}
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  inboxId: string | null;
  domainId: string | null;
  description: string;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}
export interface Delivery {
  id: string;
  type: string;
  eventId: string | null;
  emailId: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastResponse: string | null;
  lastError: string | null;
  durationMs: number | null;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}
export interface Suppression {
  email: string;
  scope: 'all' | 'marketing';
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual';
  origin: 'recipient' | 'api';
  emailId: string | null;
  detail: string | null;
  createdAt: string;
}
export interface EmailEvent {
  id: string;
  emailId: string;
  type: string;
  recipient: string | null;
  createdAt: string;
  data: Record<string, unknown> | null;
}
export interface InboxRef {
  id: string;
  address: string;
}
export interface SentSummary {
  id: string;
  subject: string;
  to: Array<{ name: string | null; address: string }>;
  status: string;
  createdAt: string;
}

// The event types of docs/api.md, "Events and status"; the box refuses any other name.
export const EVENT_TYPES = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'blocked', 'failed', 'opened', 'clicked', 'complained', 'unsubscribed', 'received', 'forwarded', 'scheduled', 'canceled'];
/** Events about a domain, an inbox or a key rather than an email. */
export const DOMAIN_EVENT_TYPES = [
  'domain.dmarc_failure', 'domain.created', 'domain.verified', 'domain.dns_changed', 'domain.deleted',
  'inbox.created', 'inbox.deleted', 'key.created', 'key.revoked',
];
export const EVENT_TONE: Record<string, Tone> = {
  delivered: 'good', opened: 'good', clicked: 'good',
  bounced: 'bad', failed: 'bad', complained: 'bad',
  delivery_delayed: 'warn', blocked: 'warn', unsubscribed: 'warn',
  sent: 'info', scheduled: 'info', received: 'info', forwarded: 'info',
};
export const REASONS: Record<Suppression['reason'], [Tone, string]> = { hard_bounce: ['bad', 'Hard bounce'], complaint: ['bad', 'Complaint'], unsubscribe: ['warn', 'Unsubscribed'], manual: ['info', 'Added by you'] };
export const DELIVERY: Record<Delivery['status'], [Tone, string]> = { delivered: ['good', 'Delivered'], pending: ['warn', 'Pending'], failed: ['bad', 'Failed'] };

export const small = { fontSize: '12px' } as const;
