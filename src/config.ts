// The one place configuration is read: an optional TOML file, overridden key by key by MAILWRIGHT_*
// environment variables, validated into a typed Config. A bad value stops start-up with a message that
// names the key and its variable; nothing downstream re-checks.
import { existsSync, readFileSync, accessSync, constants } from 'node:fs';
import { getServers } from 'node:dns';
import { isIP } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { join, resolve } from 'node:path';
import { validate as validCron } from 'node-cron';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';

export interface Config {
  dataDir: string;
  httpHost: string;
  httpPort: number;
  smtpHost: string;
  smtpPort: number;
  /** SMTP submission (smtp/submission.ts) on smtpHost; 0 means no listener at all, not "any free port". */
  submissionPort: number;
  hostname: string;
  publicUrl: string;
  dnsServers: string[];
  mtaPort: number;
  relayUrl: string | null;
  /** Relays for some senders or destinations ([[relay]]), tried in order before relayUrl. */
  relays: RelayRule[];
  tlsCert: string | null;
  tlsKey: string | null;
  maxMessageBytes: number;
  rateLimit: number;
  allowPrivateFetch: boolean;
  allowPrivateDelivery: boolean;
  sessionTtlHours: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Domain Connect service provider id; empty means the box's hostname. */
  domainConnectProviderId: string;
  domainConnectServiceId: string;
  /** Minutes between the periodic DNS re-checks of every domain. */
  dnsRecheckMinutes: number;
  /** Delays before the 2nd, 3rd, ... delivery attempt (ms); the last repeats. */
  retrySchedule: number[];
  /** How long a temporarily failing recipient is retried before the box gives up (ms). */
  queueLifetime: number;
  /** Concurrent connections to one MX host. */
  maxConnectionsPerMx: number;
  /** Concurrent SMTP clients of the MX listener; more get 421. */
  smtpMaxClients: number;
  /** Messages one SMTP session may send before it must reconnect. */
  smtpMaxMessages: number;
  /** Absolute limit on an SMTP session (ms), however busy it is. */
  smtpSessionTimeout: number;
  /** An SMTP session that sends nothing for this long is closed (ms). */
  smtpIdleTimeout: number;
  /** SMTP connections open at once from one client address, per listener; more get 421. */
  smtpMaxClientsPerIp: number;
  /** SMTP connections one client address may open per minute, per listener; 0 = no limit. */
  smtpConnectionRatePerIp: number;
  /** Wall-clock budget of one analysis of a received or submitted message (ms); past it, 451 4.3.0. */
  analyzeTimeout: number;
  /** How long one upload of a draft's file may take to arrive (ms). */
  uploadTimeout: number;
  /** How long a webhook endpoint has to answer 2xx (ms). */
  webhookTimeout: number;
  /** Retention in days (0 keeps forever): whole emails, their raw bytes, their events, finished webhook deliveries. */
  retentionMailDays: number;
  retentionRawDays: number;
  retentionEventsDays: number;
  retentionWebhookDays: number;
  /** Below this much free space under the data directory (MiB), new mail and sends are refused; 0 = never. */
  minFreeSpaceMb: number;
  /** A domain's DKIM key older than this many days gets a new one to publish; 0 = only when asked. */
  dkimRotationDays: number;
  /** Each domain also signs with an ed25519 key (RFC 8463) beside RSA, once DNS serves it. */
  dkimEd25519: boolean;
  /** How much memory the box may use (issue 22): `small` for a 1 GiB VPS, `default` otherwise. */
  memoryProfile: 'default' | 'small';
  /** Host names the HTTP listener answers to besides the public URL's host, localhost and IP literals. */
  httpAllowedHosts: string[];
  /** The plans a workspace can hold (DESIGN.md plans); the default plan is held by every workspace. */
  plans: Plan[];
  /** The transactional plan a workspace holds without subscribing. */
  defaultPlan: string;
  billingProvider: 'manual' | 'stripe';
  stripeSecretKey: string | null;
  stripeWebhookSecret: string | null;
  /** Stripe's REST API base (a test points it at a local HTTPS server). */
  stripeApiUrl: string;
  /** Reputation (account.ts): sends in 30 days below which no rate is judged, and the rate thresholds. */
  reputationMinSent: number;
  reputationBounceAtRisk: number;
  reputationBouncePause: number;
  reputationComplaintAtRisk: number;
  reputationComplaintPause: number;
  /** When serve writes a backup (a cron expression, server local time); null = never. */
  backupSchedule: string | null;
  /** Where scheduled backups go; <dataDir>/backups unless set. */
  backupDir: string;
  /** How many scheduled backups are kept; older ones are deleted. */
  backupKeep: number;
  /** Bearer token GET /metrics asks for; null: only loopback clients may scrape (metrics/routes.ts). */
  metricsToken: string | null;
}

/** A plan: `key` is `<tier>_<message_class>_<interval>`; a null limit is unlimited; limits are per calendar month. */
export interface Plan {
  key: string;
  tier: string;
  messageClass: 'transactional' | 'marketing';
  interval: 'monthly' | 'yearly';
  /** In minor units (cents). */
  price: number;
  currency: string;
  limits: { recipients: number | null; attachmentBytes: number | null };
}

/**
 * A relay for some mail ([[relay]]): `match` on the sending domain or the recipient's domain (each with its
 * subdomains), or everything. The session must be encrypted: STARTTLS required on smtp://, implicit TLS on
 * smtps://, and the certificate verified unless tlsVerify is false.
 */
export interface RelayRule {
  match: RelayMatch[];
  url: string;
  tlsVerify: boolean;
}
export type RelayMatch = { on: 'sender' | 'recipient'; domain: string } | { on: 'any' };

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Parser<T> = (raw: unknown) => T;
interface KeySpec<K extends keyof Config> {
  key: string;
  field: K;
  parse: Parser<Config[K]>;
  fallback: () => Config[K];
}

const fail = (msg: string): never => {
  throw new TypeError(msg);
};

const text = (raw: unknown) => (typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? String(raw) : fail('must be a string'));

const integer = (min: number, max: number): Parser<number> => (raw) => {
  const s = typeof raw === 'number' ? String(raw) : text(raw);
  if (!/^\d+$/.test(s) || Number(s) < min || Number(s) > max) fail(`must be a whole number from ${min} to ${max}`);
  return Number(s);
};

const port = integer(0, 65535);

const boolean: Parser<boolean> = (raw) => {
  if (typeof raw === 'boolean') return raw;
  const s = text(raw).toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  return fail('must be true or false');
};

const listenHost: Parser<string> = (raw) => {
  const s = text(raw);
  if (s === 'localhost' || isIP(s)) return s;
  return fail('must be an IP address to listen on (0.0.0.0, ::, 127.0.0.1, ...) or localhost');
};

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i;
const hostname: Parser<string> = (raw) => {
  const s = text(raw).replace(/\.$/, '').toLowerCase();
  if (s.length > 253 || !s.split('.').every((l) => HOST_LABEL.test(l))) fail('must be a host name such as mail.example.com');
  return s;
};

const publicUrl: Parser<string> = (raw) => {
  let url: URL;
  try {
    url = new URL(text(raw));
  } catch {
    return fail('must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('must be an http:// or https:// URL');
  if (url.search || url.hash || url.username || url.password) fail('must not carry credentials, a query or a fragment');
  return url.href.replace(/\/+$/, '');
};

// `ip`, `ip:port`, `[ipv6]:port` or a bare IPv6 address: the forms Resolver.setServers accepts.
const dnsServers: Parser<string[]> = (raw) => {
  const items = Array.isArray(raw) ? raw.map(text) : text(raw).split(',');
  const servers = items.map((s) => s.trim()).filter(Boolean);
  if (servers.length === 0) fail('must list at least one resolver');
  for (const s of servers) {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s) ?? /^([^:]+)(?::(\d+))?$/.exec(s);
    const ip = m ? m[1] : s;
    const p = m?.[2];
    if (!isIP(ip) || (p !== undefined && (Number(p) < 1 || Number(p) > 65535))) fail(`"${s}" is not an ip or ip:port`);
  }
  return servers;
};

// A list (TOML) or one comma-separated string (environment) of host names; may be empty.
const hostnames: Parser<string[]> = (raw) => (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean).map(hostname);

const PlanSchema = z
  .object({
    key: z.string(),
    tier: z.string().regex(/^[a-z0-9]{1,32}$/, 'tier must be 1-32 lower-case letters or digits'),
    message_class: z.enum(['transactional', 'marketing']),
    interval: z.enum(['monthly', 'yearly']),
    price: z.number().int().min(0),
    currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code such as USD'),
    // TOML has no null: a limit left out is unlimited, as null is in JSON.
    limits: z.object({ recipients: z.number().int().min(0).nullish(), attachment_bytes: z.number().int().min(0).nullish() }).strict().default({}),
  })
  .strict()
  .refine((p) => p.key === `${p.tier}_${p.message_class}_${p.interval}`, { message: 'key must be <tier>_<message_class>_<interval>' });

// A list of tables in TOML ([[plans]]), or the same as JSON in MAILWRIGHT_PLANS.
const plans: Parser<Plan[]> = (raw) => {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      return fail('must be a JSON array of plans');
    }
  }
  const parsed = z.array(PlanSchema).min(1).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail(`${issue.path.join('.') || 'plans'}: ${issue.message}`);
  }
  const keys = parsed.data.map((p) => p.key);
  if (new Set(keys).size !== keys.length) fail('lists a plan key twice');
  return parsed.data.map((p) => ({ key: p.key, tier: p.tier, messageClass: p.message_class, interval: p.interval, price: p.price, currency: p.currency, limits: { recipients: p.limits.recipients ?? null, attachmentBytes: p.limits.attachment_bytes ?? null } }));
};

const RelaySchema = z
  .object({
    match: z.union([z.string(), z.array(z.string()).min(1)]),
    url: z.string(),
    tls_verify: z.boolean().default(true),
  })
  .strict();

const relayMatch = (s: string): RelayMatch => {
  const m = /^(sender|recipient):(.+)$/.exec(s.trim());
  if (s.trim() === '*') return { on: 'any' };
  if (!m) return fail(`match "${s}" must be "sender:<domain>", "recipient:<domain>" or "*"`);
  return { on: m[1] as 'sender' | 'recipient', domain: hostname(m[2]) };
};

// A list of tables in TOML ([[relay]]), or the same as JSON in MAILWRIGHT_RELAY.
const relays: Parser<RelayRule[]> = (raw) => {
  let value = raw;
  if (typeof raw === 'string') {
    if (!raw.trim()) return [];
    try {
      value = JSON.parse(raw);
    } catch {
      return fail('must be a JSON array of relays such as [{"match": "sender:example.com", "url": "smtps://user:pass@smtp.example.net:465"}]');
    }
  }
  const parsed = z.array(RelaySchema).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail(`${issue.path.join('.') || 'relay'}: ${issue.message}`);
  }
  return parsed.data.map((r, i) => {
    const url = optionalUrl(['smtp:', 'smtps:'])(r.url) ?? fail(`${i}.url must not be empty`);
    return { match: (Array.isArray(r.match) ? r.match : [r.match]).map(relayMatch), url, tlsVerify: r.tls_verify };
  });
};

const rate: Parser<number> = (raw) => {
  const n = typeof raw === 'number' ? raw : Number(text(raw));
  if (!Number.isFinite(n) || n <= 0 || n > 1) fail('must be a fraction above 0 and at most 1, such as 0.05 for 5 %');
  return n;
};

const SELFHOSTED: Plan = { key: 'selfhosted_transactional_monthly', tier: 'selfhosted', messageClass: 'transactional', interval: 'monthly', price: 0, currency: 'USD', limits: { recipients: null, attachmentBytes: null } };

const optionalUrl = (protocols: string[]): Parser<string | null> => (raw) => {
  const s = text(raw);
  if (!s) return null;
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return fail(`must be a URL such as ${protocols[0]}//user:pass@host:587`);
  }
  if (!protocols.includes(url.protocol)) fail(`must use ${protocols.join(' or ')}`);
  if (!url.hostname) fail('must name a host');
  return s;
};

const readableFile: Parser<string | null> = (raw) => {
  const s = text(raw);
  if (!s) return null;
  const path = resolve(s);
  try {
    accessSync(path, constants.R_OK);
  } catch {
    fail(`cannot read ${path}`);
  }
  return path;
};

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const durationOf = (s: string): number => {
  const m = /^(\d+)\s*([smhd])$/.exec(s.trim());
  if (!m || Number(m[1]) === 0) return fail(`"${s}" is not a duration such as 30s, 5m, 2h or 5d`);
  return Number(m[1]) * UNITS[m[2]];
};
const duration: Parser<number> = (raw) => durationOf(text(raw));
const durations: Parser<number[]> = (raw) => {
  const list = (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) fail('must list at least one duration');
  return list.map(durationOf);
};

const logLevel: Parser<Config['logLevel']> = (raw) => {
  const s = text(raw).toLowerCase();
  if (s === 'debug' || s === 'info' || s === 'warn' || s === 'error') return s;
  return fail('must be debug, info, warn or error');
};

// A cron expression (five fields, or six with seconds) as node-cron reads it; empty or "off" is no schedule.
const backupSchedule: Parser<string | null> = (raw) => {
  const s = text(raw);
  if (s === '' || s.toLowerCase() === 'off') return null;
  return validCron(s) ? s : fail('must be a cron expression such as "30 3 * * *" (03:30 every day), or empty for none');
};

const spec = <K extends keyof Config>(key: string, field: K, parse: Parser<Config[K]>, fallback: () => Config[K]): KeySpec<K> => ({
  key,
  field,
  parse,
  fallback,
});

// The TOML key is the variable's name without MAILWRIGHT_, in lower case.
export const KEYS = [
  spec('data_dir', 'dataDir', (raw) => resolve(text(raw) || fail('must not be empty')), () => resolve('data')),
  spec('http_host', 'httpHost', listenHost, () => '127.0.0.1'),
  spec('http_port', 'httpPort', port, () => 8080),
  spec('smtp_host', 'smtpHost', listenHost, () => '0.0.0.0'),
  spec('smtp_port', 'smtpPort', port, () => 25),
  spec('submission_port', 'submissionPort', port, () => 587),
  spec('hostname', 'hostname', hostname, () => hostname(osHostname())),
  spec('public_url', 'publicUrl', publicUrl, () => 'http://localhost:8080'),
  spec('dns_servers', 'dnsServers', dnsServers, () => getServers()),
  spec('mta_port', 'mtaPort', integer(1, 65535), () => 25),
  spec('relay_url', 'relayUrl', optionalUrl(['smtp:', 'smtps:']), () => null),
  spec('relay', 'relays', relays, () => []),
  spec('tls_cert', 'tlsCert', readableFile, () => null),
  spec('tls_key', 'tlsKey', readableFile, () => null),
  spec('max_message_bytes', 'maxMessageBytes', integer(1024, 2 ** 31 - 1), () => 26_214_400),
  spec('rate_limit', 'rateLimit', integer(0, 1_000_000), () => 100),
  spec('allow_private_fetch', 'allowPrivateFetch', boolean, () => false),
  spec('allow_private_delivery', 'allowPrivateDelivery', boolean, () => false),
  spec('session_ttl_hours', 'sessionTtlHours', integer(1, 24 * 365), () => 24 * 7),
  spec('log_level', 'logLevel', logLevel, () => 'info'),
  spec('domain_connect_provider_id', 'domainConnectProviderId', (raw) => (text(raw) ? hostname(raw) : ''), () => ''),
  spec('domain_connect_service_id', 'domainConnectServiceId', (raw) => (/^[A-Za-z0-9._-]{1,64}$/.test(text(raw)) ? text(raw) : fail('must be 1-64 letters, digits, dots, dashes or underscores')), () => 'mailwright'),
  spec('dns_recheck_minutes', 'dnsRecheckMinutes', integer(1, 24 * 60), () => 60),
  spec('retry_schedule', 'retrySchedule', durations, () => durations('5m,10m,20m,40m,1h,2h,4h')),
  spec('queue_lifetime', 'queueLifetime', duration, () => durationOf('5d')),
  spec('max_connections_per_mx', 'maxConnectionsPerMx', integer(1, 100), () => 10),
  spec('smtp_max_clients', 'smtpMaxClients', integer(1, 100_000), () => 200),
  spec('smtp_max_messages', 'smtpMaxMessages', integer(1, 1_000_000), () => 1000),
  spec('smtp_session_timeout', 'smtpSessionTimeout', duration, () => durationOf('10m')),
  spec('smtp_idle_timeout', 'smtpIdleTimeout', duration, () => durationOf('5m')),
  spec('smtp_max_clients_per_ip', 'smtpMaxClientsPerIp', integer(1, 100_000), () => 20),
  spec('smtp_connection_rate_per_ip', 'smtpConnectionRatePerIp', integer(0, 1_000_000), () => 60),
  spec('analyze_timeout', 'analyzeTimeout', duration, () => durationOf('10s')),
  spec('upload_timeout', 'uploadTimeout', duration, () => durationOf('2m')),
  spec('webhook_timeout', 'webhookTimeout', duration, () => durationOf('10s')),
  spec('retention_mail_days', 'retentionMailDays', integer(0, 100_000), () => 0),
  spec('retention_raw_days', 'retentionRawDays', integer(0, 100_000), () => 0),
  spec('retention_events_days', 'retentionEventsDays', integer(0, 100_000), () => 0),
  spec('retention_webhook_days', 'retentionWebhookDays', integer(1, 100_000), () => 30),
  spec('min_free_space_mb', 'minFreeSpaceMb', integer(0, 10_000_000), () => 256),
  spec('dkim_rotation_days', 'dkimRotationDays', integer(0, 10_000), () => 0),
  spec('dkim_ed25519', 'dkimEd25519', boolean, () => false),
  spec('memory_profile', 'memoryProfile', (raw) => (text(raw) === 'default' || text(raw) === 'small' ? (text(raw) as 'default' | 'small') : fail('must be default or small')), () => 'default'),
  spec('http_allowed_hosts', 'httpAllowedHosts', hostnames, () => []),
  spec('plans', 'plans', plans, () => [SELFHOSTED]),
  spec('default_plan', 'defaultPlan', (raw) => text(raw), () => SELFHOSTED.key),
  spec('billing_provider', 'billingProvider', (raw) => (text(raw) === 'manual' || text(raw) === 'stripe' ? (text(raw) as 'manual' | 'stripe') : fail('must be manual or stripe')), () => 'manual'),
  spec('stripe_secret_key', 'stripeSecretKey', (raw) => text(raw) || null, () => null),
  spec('stripe_webhook_secret', 'stripeWebhookSecret', (raw) => text(raw) || null, () => null),
  spec('stripe_api_url', 'stripeApiUrl', (raw) => optionalUrl(['https:'])(raw) ?? fail('must not be empty'), () => 'https://api.stripe.com'),
  spec('reputation_min_sent', 'reputationMinSent', integer(1, 1_000_000_000), () => 100),
  spec('reputation_bounce_at_risk', 'reputationBounceAtRisk', rate, () => 0.02),
  spec('reputation_bounce_pause', 'reputationBouncePause', rate, () => 0.05),
  spec('reputation_complaint_at_risk', 'reputationComplaintAtRisk', rate, () => 0.001),
  spec('reputation_complaint_pause', 'reputationComplaintPause', rate, () => 0.003),
  spec('backup_schedule', 'backupSchedule', backupSchedule, () => null),
  // Empty until loadConfig knows data_dir, which the default lives in.
  spec('backup_dir', 'backupDir', (raw) => (text(raw) ? resolve(text(raw)) : ''), () => ''),
  spec('backup_keep', 'backupKeep', integer(1, 10_000), () => 7),
  // Metrics (issue 21): a scrape token long enough not to be guessed; unset keeps /metrics to loopback.
  spec('metrics_token', 'metricsToken', (raw) => (text(raw) ? (/^[\x21-\x7e]{16,}$/.test(text(raw)) ? text(raw) : fail('must be at least 16 printable characters without spaces, such as the output of openssl rand -hex 32')) : null), () => null),
] as const;

export const envName = (key: string) => `MAILWRIGHT_${key.toUpperCase()}`;
const DEFAULT_CONFIG_FILE = 'config/mailwright.toml';

/** Reads MAILWRIGHT_CONFIG (or config/mailwright.toml if present) and the environment into a Config. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const explicit = env.MAILWRIGHT_CONFIG?.trim();
  const file = resolve(explicit || DEFAULT_CONFIG_FILE);
  let fromFile: Record<string, unknown> = {};
  if (explicit && !existsSync(file)) throw new ConfigError(`config: MAILWRIGHT_CONFIG names ${file}, which does not exist`);
  if (existsSync(file)) fromFile = readTomlFile(file);

  const known = new Set<string>(KEYS.map((k) => k.key));
  for (const key of Object.keys(fromFile)) {
    if (!known.has(key)) throw new ConfigError(`config: unknown key "${key}" in ${file} (see config/mailwright.example.toml)`);
  }
  for (const name of Object.keys(env)) {
    if (name.startsWith('MAILWRIGHT_') && name !== 'MAILWRIGHT_CONFIG' && !known.has(name.slice(11).toLowerCase())) {
      throw new ConfigError(`config: unknown variable ${name}`);
    }
  }

  const config: Partial<Record<keyof Config, unknown>> = {};
  for (const k of KEYS) {
    const variable = envName(k.key);
    const [raw, source] = env[variable] !== undefined ? [env[variable], variable] : k.key in fromFile ? [fromFile[k.key], `${k.key} in ${file}`] : [undefined, ''];
    try {
      config[k.field] = raw === undefined ? k.fallback() : k.parse(raw);
    } catch (err) {
      const origin = raw === undefined ? 'the default; set it explicitly' : `got ${JSON.stringify(raw)} from ${source}`;
      throw new ConfigError(`config: ${k.key} (${variable}) ${(err as Error).message}; ${origin}`);
    }
  }
  const result = config as Config;
  result.domainConnectProviderId ||= result.hostname;
  result.backupDir ||= join(result.dataDir, 'backups');
  const fallback = result.plans.find((p) => p.key === result.defaultPlan);
  if (!fallback || fallback.messageClass !== 'transactional') {
    throw new ConfigError(`config: default_plan (MAILWRIGHT_DEFAULT_PLAN) "${result.defaultPlan}" must be a transactional plan listed in plans`);
  }
  if (result.billingProvider === 'stripe' && (!result.stripeSecretKey || !result.stripeWebhookSecret)) {
    throw new ConfigError('config: billing_provider "stripe" needs stripe_secret_key (MAILWRIGHT_STRIPE_SECRET_KEY) and stripe_webhook_secret (MAILWRIGHT_STRIPE_WEBHOOK_SECRET)');
  }
  for (const [atRisk, pause, what] of [[result.reputationBounceAtRisk, result.reputationBouncePause, 'bounce'], [result.reputationComplaintAtRisk, result.reputationComplaintPause, 'complaint']] as const) {
    if (atRisk >= pause) throw new ConfigError(`config: reputation_${what}_at_risk must be below reputation_${what}_pause`);
  }
  if ((result.tlsCert === null) !== (result.tlsKey === null)) {
    throw new ConfigError('config: tls_cert (MAILWRIGHT_TLS_CERT) and tls_key (MAILWRIGHT_TLS_KEY) must be set together');
  }
  return result;
}

function readTomlFile(file: string): Record<string, unknown> {
  try {
    return parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`config: ${file} is not valid TOML: ${(err as Error).message.split('\n')[0]}`);
  }
}
