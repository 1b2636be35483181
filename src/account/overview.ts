// What GET /account and GET /profile show of a workspace (API-SPEC.md section 2): its owner, this period's
// usage against the held plans, what it may do, its reputation, the box it runs on, its billing state, the
// plans on offer and its counts. Read-only, and never a key, a hash or a password.
import { createRequire } from 'node:module';
import { X509Certificate } from 'node:crypto';
import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/config.ts';
import { iso, isoOrNull } from '../clock.ts';
import { get, run, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { boxAddresses } from '../dns/verify.ts';
import { reverseLookup } from '../dns/resolver.ts';
import { heldPlans, limitsOf, periodOf, usageOf, type Holding } from './plans.ts';
import { reputationOf, sendingPause } from './reputation.ts';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/** What the box tells about itself: fixed at start (start/front-doors.ts), with its TLS certificate. */
export interface BoxFacts {
  tlsCert: string;
  /** Where the certificate in use comes from, and ACME's last error for the hostname. */
  tlsState?: () => TlsState;
  /** Started by `mailwright try`: mail to other domains is kept in the local outbox, never sent. */
  tryMode?: boolean;
}

export interface TlsState {
  source: 'acme' | 'files' | 'self-signed';
  /** null when acme is off. */
  acme: { lastError: string | null; lastErrorAt: string | null; retryAt: string | null } | null;
}

const presentPlan = (p: Config['plans'][number]) => ({ key: p.key, tier: p.tier, messageClass: p.messageClass, interval: p.interval, price: p.price, currency: p.currency, limits: p.limits });

const presentHolding = (h: Holding) => ({
  id: h.subscriptionId,
  planKey: h.plan.key,
  messageClass: h.plan.messageClass,
  tier: h.plan.tier,
  state: 'active',
  provider: h.provider,
  periodStart: isoOrNull(h.periodStart),
  periodEnd: isoOrNull(h.periodEnd),
});

function* owner(workspaceId: string) {
  const row = yield* get<{ id: string; email: string; created_at: number }>('SELECT id, email, created_at FROM users WHERE workspace_id = ? ORDER BY created_at LIMIT 1', workspaceId);
  return row ? { id: row.id, email: row.email, createdAt: iso(row.created_at) } : null;
}

function tlsOf(pem: string, state: TlsState | undefined) {
  try {
    const cert = new X509Certificate(pem);
    const names = (cert.subjectAltName ?? '').split(', ').filter((n) => n.startsWith('DNS:')).map((n) => n.slice(4));
    return { subject: cert.subject, issuer: cert.issuer, names, expiresAt: new Date(cert.validTo).toISOString(), selfSigned: cert.subject === cert.issuer, source: state?.source ?? null, acme: state?.acme ?? null };
  } catch {
    return null;
  }
}

/** Usage, access, reputation, billing and plans: what both GET /account and GET /profile show. */
export function* accountState(config: Config, workspaceId: string, now: number) {
  const held = yield* heldPlans(config, workspaceId);
  const limits = limitsOf(held);
  const used = yield* usageOf(workspaceId, now);
  const period = periodOf(now);
  const pause = yield* sendingPause(workspaceId);
  const reputation = yield* reputationOf(config, workspaceId, now);
  const byPrice = [...held].sort((a, b) => b.plan.price - a.plan.price);
  return {
    usage: {
      periodStart: iso(period.start),
      periodEnd: iso(period.end),
      recipients: { used: used.recipients, limit: limits.recipients },
      attachmentBytes: { used: used.attachmentBytes, limit: limits.attachmentBytes },
    },
    access: {
      tier: byPrice[0].plan.tier,
      messageClasses: [...new Set(held.map((h) => h.plan.messageClass))],
      marketing: held.some((h) => h.plan.messageClass === 'marketing'),
      sendingPaused: pause !== null,
      pausedAt: isoOrNull(pause?.pausedAt),
      pauseReason: pause?.reason ?? null,
    },
    reputation,
    billing: { provider: config.billingProvider, subscriptions: held.map(presentHolding) },
    plans: config.plans.map(presentPlan),
  };
}

function* count(table: string, workspaceId: string): Query<number> {
  return Number(yield* value<number>(`SELECT count(*) FROM "${table}" WHERE workspace_id = ?`, workspaceId));
}

const TABLES = ['domains', 'inboxes', 'emails', 'templates', 'labels', 'api_keys'] as const;

/** GET /account: the whole account object. */
export function* accountOf(config: Config, box: BoxFacts, workspaceId: string, now: number) {
  const state = yield* accountState(config, workspaceId, now);
  const user = yield* owner(workspaceId);
  const dns = yield* boxDnsOf();
  const stats: Array<[string, number]> = [];
  for (const t of TABLES) stats.push([t === 'api_keys' ? 'keys' : t, yield* count(t, workspaceId)]);
  return {
    user,
    ...state,
    infrastructure: {
      hostname: config.hostname,
      publicUrl: config.publicUrl,
      smtpPort: config.smtpPort,
      submissionPort: config.submissionPort || null,
      tryMode: box.tryMode === true,
      tls: tlsOf(box.tlsCert, box.tlsState?.()),
      dns,
    },
    workspace: {
      mailer: `Mailwright ${VERSION}`,
      stats: Object.fromEntries(stats),
    },
  };
}

interface BoxDns {
  checkedAt: number;
  addresses: Array<{ address: string; ptr: string[]; forwardConfirmed: boolean }>;
  problem: string | null;
}

function* boxDnsOf() {
  const raw = yield* value<string | Buffer>("SELECT value FROM box_settings WHERE key = 'box_dns'");
  if (!raw) return null;
  const dns = JSON.parse(String(raw)) as BoxDns;
  return { checkedAt: iso(dns.checkedAt), addresses: dns.addresses, problem: dns.problem };
}

/** Looks up the box's addresses and their PTR names (as doctor does) and keeps the answer for GET /account. */
export async function recordBoxDns(store: Pick<Store, 'write'>, resolver: Resolver, hostname: string, now: number): Promise<void> {
  const found = await boxAddresses(resolver, hostname);
  const dns: BoxDns = { checkedAt: now, addresses: [], problem: null };
  if (!found.ok) dns.problem = found.missing ? `${hostname} has no A or AAAA record` : `looking up ${hostname} failed (${found.code})`;
  else {
    for (const address of found.value) {
      const ptr = await reverseLookup(resolver, address).catch(() => [] as string[]);
      dns.addresses.push({ address, ptr, forwardConfirmed: ptr.includes(hostname) });
    }
  }
  await store.write(() => run("INSERT INTO box_settings (key, value) VALUES ('box_dns', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", JSON.stringify(dns)));
}
