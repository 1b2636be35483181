// How each kind of configuration value is read (config.ts applies them key by key): a parser takes what the
// TOML file or the environment gave, a string or a TOML value, and returns the typed value or throws a TypeError
// saying what the value must be, which config.ts prefixes with the key, its variable and where the value came from.
import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { validate as validCron } from 'node-cron';
import { z } from 'zod';

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

export type Parser<T> = (raw: unknown) => T;

export const fail = (msg: string): never => {
  throw new TypeError(msg);
};

export const text = (raw: unknown) => (typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? String(raw) : fail('must be a string'));

export const integer = (min: number, max: number): Parser<number> => (raw) => {
  const s = typeof raw === 'number' ? String(raw) : text(raw);
  if (!/^\d+$/.test(s) || Number(s) < min || Number(s) > max) fail(`must be a whole number from ${min} to ${max}`);
  return Number(s);
};

export const port = integer(0, 65535);

export const boolean: Parser<boolean> = (raw) => {
  if (typeof raw === 'boolean') return raw;
  const s = text(raw).toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  return fail('must be true or false');
};

export const listenHost: Parser<string> = (raw) => {
  const s = text(raw);
  if (s === 'localhost' || isIP(s)) return s;
  return fail('must be an IP address to listen on (0.0.0.0, ::, 127.0.0.1, ...) or localhost');
};

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i;
export const hostname: Parser<string> = (raw) => {
  const s = text(raw).replace(/\.$/, '').toLowerCase();
  if (s.length > 253 || !s.split('.').every((l) => HOST_LABEL.test(l))) fail('must be a host name such as mail.example.com');
  return s;
};

export const publicUrl: Parser<string> = (raw) => {
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
export const dnsServers: Parser<string[]> = (raw) => {
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

// A list (TOML) or one comma-separated string (environment) of IP addresses and CIDR ranges (192.0.2.0/24,
// 2001:db8::/32); may be empty. Kept as text: net.BlockList is built from it where it is used (ip-ranges.ts).
export const addressRanges: Parser<string[]> = (raw) => {
  const items = (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    const [ip, bits, extra] = item.split('/');
    const family = isIP(ip);
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) fail(`"${item}" is not an IP address or a CIDR range such as 192.0.2.0/24`);
  }
  return items;
};

/** One DNS blocklist zone and what a listing in it does; `action` null until config.ts applies dnsbl_action. */
export interface DnsblZone {
  zone: string;
  action: 'refuse' | 'score';
}

// A list (TOML) or one comma-separated string (environment) of zones, each optionally followed by `=refuse` or
// `=score` ("zen.spamhaus.org", "bl.example.net=score"); may be empty.
export const dnsblZones: Parser<DnsblZone[]> = (raw) => {
  const items = (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean);
  const zones = items.map((item) => {
    const [zone, action, extra] = item.split('=').map((s) => s.trim());
    if (extra !== undefined || (action !== undefined && action !== 'refuse' && action !== 'score')) fail(`"${item}" must be a zone such as zen.spamhaus.org, optionally followed by =refuse or =score`);
    return { zone: hostname(zone), action: (action ?? null) as DnsblZone['action'] };
  });
  if (new Set(zones.map((z) => z.zone)).size !== zones.length) fail('lists a zone twice');
  return zones;
};

/** One of a few words. */
export const oneOf = <T extends string>(words: readonly T[]): Parser<T> => (raw) => {
  const s = text(raw);
  return (words as readonly string[]).includes(s) ? (s as T) : fail(`must be ${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);
};

// A list (TOML) or one comma-separated string (environment) of host names; may be empty.
export const hostnames: Parser<string[]> = (raw) => (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean).map(hostname);

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
export const plans: Parser<Plan[]> = (raw) => {
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
export const relays: Parser<RelayRule[]> = (raw) => {
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

export const rate: Parser<number> = (raw) => {
  const n = typeof raw === 'number' ? raw : Number(text(raw));
  if (!Number.isFinite(n) || n <= 0 || n > 1) fail('must be a fraction above 0 and at most 1, such as 0.05 for 5 %');
  return n;
};

export const optionalUrl = (protocols: string[]): Parser<string | null> => (raw) => {
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

/** A PostgreSQL connection URL (libpq's form, as node-postgres reads it); a socket directory may stand for the host. */
export const databaseUrl: Parser<string | null> = (raw) => {
  const s = text(raw);
  if (!s) return null;
  let url: URL | null = null;
  try {
    url = new URL(s);
  } catch {
    // never the value itself in the message: it holds the password
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) fail('must be a PostgreSQL URL such as postgres://mailwright:PASSWORD@127.0.0.1:5432/mailwright');
  if (!url!.pathname.slice(1)) fail('must name the database, such as postgres://mailwright:PASSWORD@127.0.0.1:5432/mailwright');
  return s;
};

export const readableFile: Parser<string | null> = (raw) => {
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
export const durationOf = (s: string): number => {
  const m = /^(\d+)\s*([smhd])$/.exec(s.trim());
  if (!m || Number(m[1]) === 0) return fail(`"${s}" is not a duration such as 30s, 5m, 2h or 5d`);
  return Number(m[1]) * UNITS[m[2]];
};
export const duration: Parser<number> = (raw) => durationOf(text(raw));
/** A duration, or milliseconds written `250ms`: for a budget that can be well under a second. */
export const budget: Parser<number> = (raw) => {
  const m = /^(\d+)\s*ms$/.exec(text(raw).trim());
  if (!m) return durationOf(text(raw));
  return Number(m[1]) > 0 ? Number(m[1]) : fail(`"${text(raw)}" is not a duration such as 500ms, 10s or 1m`);
};
export const durations: Parser<number[]> = (raw) => {
  const list = (Array.isArray(raw) ? raw.map(text) : text(raw).split(',')).map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) fail('must list at least one duration');
  return list.map(durationOf);
};

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export const logLevel: Parser<LogLevel> = (raw) => {
  const s = text(raw).toLowerCase();
  if (s === 'debug' || s === 'info' || s === 'warn' || s === 'error') return s;
  return fail('must be debug, info, warn or error');
};

// A cron expression (five fields, or six with seconds) as node-cron reads it; empty or "off" is no schedule.
export const backupSchedule: Parser<string | null> = (raw) => {
  const s = text(raw);
  if (s === '' || s.toLowerCase() === 'off') return null;
  return validCron(s) ? s : fail('must be a cron expression such as "30 3 * * *" (03:30 every day), or empty for none');
};
