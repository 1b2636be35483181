// What the Overview reads from the API (the account's usage, plans, reputation and billing; analytics; the
// queue; doctor's findings) and how its numbers are written. Billing reads the account too.

export interface Usage {
  periodStart: string;
  periodEnd: string;
  recipients: { used: number; limit: number | null };
  attachmentBytes: { used: number; limit: number | null };
}
export interface Reputation {
  windowDays: number;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  bounceRate: number | null;
  complaintRate: number | null;
  status: 'healthy' | 'at_risk' | 'paused';
  thresholds: { minSent: number; bounceAtRisk: number; bouncePause: number; complaintAtRisk: number; complaintPause: number };
}
export interface Plan {
  key: string;
  tier: string;
  messageClass: 'transactional' | 'marketing';
  interval: 'monthly' | 'yearly';
  price: number;
  currency: string;
  limits: { recipients: number | null; attachmentBytes: number | null };
}
export interface Subscription {
  id: string | null;
  planKey: string;
  messageClass: 'transactional' | 'marketing';
  tier: string;
  state: string;
  provider: string;
  periodStart: string | null;
  periodEnd: string | null;
}
/** The certificate STARTTLS and HTTPS present (GET /account infrastructure.tls), and ACME's last error. */
export interface TlsInfo {
  subject: string;
  issuer: string;
  names: string[];
  expiresAt: string;
  selfSigned: boolean;
  source: 'acme' | 'files' | 'self-signed' | null;
  acme: { lastError: string | null; lastErrorAt: string | null; retryAt: string | null } | null;
}
export interface Account {
  usage: Usage;
  infrastructure: { hostname: string; tls: TlsInfo | null };
  access: { tier: string; sendingPaused: boolean; pausedAt: string | null; pauseReason: string | null };
  reputation: Reputation;
  billing: { provider: 'manual' | 'stripe'; subscriptions: Subscription[] };
  plans: Plan[];
}
export interface Analytics {
  days: number;
  metrics: { sent: number; received: number; bounced: number; blocked: number; delivered: number; opened: number; clicks: number; complaints: number };
  timeline: Array<{ date: string; sent: number; received: number }>;
}
export interface QueueState {
  counts: { queued: number; sending: number; deferred: number };
  oldestDeferred: { emailId: string; recipient: string; since: string | null; lastResponse: string | null } | null;
}
export interface Finding {
  area: 'box' | 'domain';
  subject: string;
  check: string;
  status: 'ok' | 'problem' | 'pending';
  message: string;
  fix: string | null;
}
export interface Health {
  findings: Finding[];
  problems: number;
  checkedAt: string;
}

export const count = (n: number) => n.toLocaleString();
export const percent = (rate: number) => `${(rate * 100).toFixed(rate < 0.01 ? 2 : 1)} %`;
export const day = (iso: string) => new Date(iso).toLocaleDateString([], { month: 'short', day: 'numeric', timeZone: 'UTC' });
