// The one place configuration is read: an optional TOML file, overridden key by key by MAILWRIGHT_*
// environment variables, validated into a typed Config. A bad value stops start-up with a message that
// names the key and its variable; nothing downstream re-checks.
import { existsSync, readFileSync } from 'node:fs';
import { getServers } from 'node:dns';
import { hostname as osHostname } from 'node:os';
import { isIPv6 } from 'node:net';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { checkRules, ConfigError } from './rules.ts';
import type { Config } from './settings.ts';
import {
  addressRanges, backupSchedule, boolean, budget, databaseUrl, dnsServers, duration, durationOf, durations, fail, hostname, hostnames, integer, listenHost, logLevel, optionalUrl, plans, port, publicUrl, rate,
  readableFile, relays, text, dnsblZones, oneOf, type Parser, type Plan,
} from './values.ts';

export type { Config } from './settings.ts';

export type { DnsblZone, Plan, RelayMatch, RelayRule } from './values.ts';

export { ConfigError };

interface KeySpec<K extends keyof Config> {
  key: string;
  field: K;
  parse: Parser<Config[K]>;
  fallback: () => Config[K];
}

const SELFHOSTED: Plan = { key: 'selfhosted_transactional_monthly', tier: 'selfhosted', messageClass: 'transactional', interval: 'monthly', price: 0, currency: 'USD', limits: { recipients: null, attachmentBytes: null } };


const spec = <K extends keyof Config>(key: string, field: K, parse: Parser<Config[K]>, fallback: () => Config[K]): KeySpec<K> => ({
  key,
  field,
  parse,
  fallback,
});

// The TOML key is the variable's name without MAILWRIGHT_, in lower case.
export const KEYS = [
  spec('data_dir', 'dataDir', (raw) => resolve(text(raw) || fail('must not be empty')), () => resolve('data')),
  spec('database_url', 'databaseUrl', databaseUrl, () => null),
  spec('http_host', 'httpHost', listenHost, () => '127.0.0.1'),
  spec('http_port', 'httpPort', port, () => 8080),
  spec('smtp_host', 'smtpHost', listenHost, () => '0.0.0.0'),
  spec('smtp_port', 'smtpPort', port, () => 25),
  // -1 until loadConfig knows smtp_port: the default follows it (defaultSubmissionPort).
  spec('submission_port', 'submissionPort', port, () => -1),
  spec('hostname', 'hostname', hostname, () => hostname(osHostname())),
  // Empty until loadConfig knows http_host and http_port, which the default follows (defaultPublicUrl).
  spec('public_url', 'publicUrl', publicUrl, () => ''),
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
  spec('render_timeout', 'renderTimeout', budget, () => durationOf('10s')),
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
  // Metrics: a scrape token long enough not to be guessed; unset keeps /metrics to loopback.
  spec('metrics_allow', 'metricsAllow', addressRanges, () => []),
  spec('trusted_proxies', 'trustedProxies', addressRanges, () => []),
  spec('smtp_proxy_protocol', 'smtpProxyProtocol', boolean, () => false),
  spec('submission_proxy_protocol', 'submissionProxyProtocol', boolean, () => false),
  spec('http_proxy_protocol', 'httpProxyProtocol', boolean, () => false),
  spec('dkim_max_signatures', 'dkimMaxSignatures', integer(1, 10_000), () => 10),
  spec('smtp_max_clients_per_network', 'smtpMaxClientsPerNetwork', integer(1, 100_000), () => 50),
  // -1 until loadConfig knows smtp_max_clients: the default is a fifth of it.
  spec('smtp_reserved_clients', 'smtpReservedClients', integer(0, 100_000), () => -1),
  spec('upload_memory_mb', 'uploadMemoryMb', integer(16, 100_000), () => 64),
  spec('metrics_token', 'metricsToken', (raw) => (text(raw) ? (/^[\x21-\x7e]{16,}$/.test(text(raw)) ? text(raw) : fail('must be at least 16 printable characters without spaces, such as the output of openssl rand -hex 32')) : null), () => null),
  spec('trash_days', 'trashDays', integer(0, 100_000), () => 30),
  // Blocklists at the door and rspamd. A zone's action is null until loadConfig knows dnsbl_action.
  spec('dnsbl', 'dnsbl', dnsblZones, () => []),
  spec('dnsbl_action', 'dnsblAction', oneOf(['refuse', 'score'] as const), () => 'refuse'),
  spec('uribl', 'uribl', hostnames, () => []),
  spec('dnsbl_timeout', 'dnsblTimeout', budget, () => 1500),
  spec('spam_filter', 'spamFilter', oneOf(['builtin', 'rspamd', 'off'] as const), () => 'builtin'),
  spec('rspamd_url', 'rspamdUrl', (raw) => optionalUrl(['http:', 'https:'])(raw) ?? fail('must not be empty'), () => 'http://127.0.0.1:11333'),
  spec('rspamd_controller_url', 'rspamdControllerUrl', (raw) => optionalUrl(['http:', 'https:'])(raw) ?? fail('must not be empty'), () => 'http://127.0.0.1:11334'),
  spec('rspamd_password', 'rspamdPassword', (raw) => text(raw) || null, () => null),
  // Certificates by ACME and the HTTPS listener.
  spec('acme', 'acme', boolean, () => false),
  spec('acme_directory', 'acmeDirectory', (raw) => optionalUrl(['https:'])(raw) ?? fail('must not be empty'), () => LETS_ENCRYPT_DIRECTORY),
  spec('acme_email', 'acmeEmail', (raw) => (text(raw) ? (/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text(raw)) ? text(raw) : fail('must be an email address such as postmaster@example.com')) : null), () => null),
  spec('acme_http_port', 'acmeHttpPort', port, () => 80),
  spec('acme_ca_file', 'acmeCaFile', readableFile, () => null),
  spec('https_port', 'httpsPort', port, () => 0),
  // Transport security (outbound MTA-STS, DANE, TLS reports).
  spec('tls_ca_file', 'tlsCaFile', readableFile, () => null),
  spec('mta_sts_port', 'mtaStsPort', integer(1, 65535), () => 443),
  spec('retention_audit_days', 'retentionAuditDays', integer(0, 100_000), () => 400),
] as const;

/** Let's Encrypt's production directory (RFC 8555 7.1.1); its staging one is https://acme-staging-v02.api.letsencrypt.org/directory. */
export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export const envName = (key: string) => `MAILWRIGHT_${key.toUpperCase()}`;

/**
 * submission_port when it is not set: 587 beside SMTP on a privileged port (root, or systemd's
 * CAP_NET_BIND_SERVICE, binds both); 1587 when SMTP was moved above 1023 (an ordinary user trying the box, as
 * the README's quick start does), where 587 could not be bound either. It follows smtp_port and nothing else
 * (not the user running the command), so `doctor` run as root and `serve` run as the box's user agree.
 */
export const UNPRIVILEGED_SUBMISSION_PORT = 1587;
export const defaultSubmissionPort = (smtpPort: number) => (smtpPort > 1023 ? UNPRIVILEGED_SUBMISSION_PORT : 587);

/**
 * public_url when it is not set: the HTTP listener itself, so the setup link and the links in mail reach it.
 * localhost for a wildcard or loopback http_host (a browser on this machine); the address itself for any other.
 */
export function defaultPublicUrl(httpHost: string, httpPort: number): string {
  const loopback = httpHost === 'localhost' || httpHost === '0.0.0.0' || httpHost === '::' || httpHost === '::1' || /^127\./.test(httpHost) || /^::ffff:127\./i.test(httpHost);
  const host = loopback ? 'localhost' : isIPv6(httpHost) ? `[${httpHost}]` : httpHost;
  return `http://${host}${httpPort === 80 ? '' : `:${httpPort}`}`;
}
const DEFAULT_CONFIG_FILE = 'config/mailwright.toml';

/**
 * Reads MAILWRIGHT_CONFIG (or config/mailwright.toml if present) and the environment into a Config. `readFile`
 * false reads no file at all (mailwright try: a box's configuration must not leak into it).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: { readFile?: boolean } = {}): Config {
  const explicit = env.MAILWRIGHT_CONFIG?.trim();
  const file = resolve(explicit || DEFAULT_CONFIG_FILE);
  let fromFile: Record<string, unknown> = {};
  if (opts.readFile !== false) {
    if (explicit && !existsSync(file)) throw new ConfigError(`config: MAILWRIGHT_CONFIG names ${file}, which does not exist`);
    if (existsSync(file)) fromFile = readTomlFile(file);
  }

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
      const shown = k.key === 'database_url' ? 'a value' : JSON.stringify(raw); // it holds a password
      const origin = raw === undefined ? 'the default; set it explicitly' : `got ${shown} from ${source}`;
      throw new ConfigError(`config: ${k.key} (${variable}) ${(err as Error).message}; ${origin}`);
    }
  }
  const result = config as Config;
  if (result.submissionPort < 0) result.submissionPort = defaultSubmissionPort(result.smtpPort);
  if (!result.publicUrl) {
    if (result.httpPort === 0) throw new ConfigError('config: public_url (MAILWRIGHT_PUBLIC_URL) must be set when http_port is 0 (any free port): the links the box prints and puts in mail need the port');
    result.publicUrl = defaultPublicUrl(result.httpHost, result.httpPort);
  }
  result.domainConnectProviderId ||= result.hostname;
  result.backupDir ||= join(result.dataDir, 'backups');
  if (result.smtpReservedClients < 0) result.smtpReservedClients = Math.floor(result.smtpMaxClients / 5);
  for (const zone of result.dnsbl) zone.action ??= result.dnsblAction;
  checkRules(result);
  return result;
}

function readTomlFile(file: string): Record<string, unknown> {
  try {
    return parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`config: ${file} is not valid TOML: ${(err as Error).message.split('\n')[0]}`);
  }
}
