// What the box is configured with: every key of config.ts, read and checked, as the rest of the code sees it.
import type { DnsblZone, LogLevel, Plan, RelayRule } from './values.ts';

export interface Config {
  dataDir: string;
  /** The store on PostgreSQL (several nodes share it); null keeps it in SQLite under dataDir. A secret: it holds the password. */
  databaseUrl: string | null;
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
  logLevel: LogLevel;
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
  /** Wall-clock budget of one template render on a render thread (ms). */
  renderTimeout: number;
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
  /** How much memory the box may use: `small` for a 1 GiB VPS, `default` otherwise. */
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
  /** Addresses and ranges that may read /metrics without the token (metrics/routes.ts). */
  metricsAllow: string[];
  /**
   * Peers (addresses and ranges) whose X-Forwarded-For or Forwarded header names the real client: the reverse
   * proxies in front of the box. A request from any other peer is judged by the peer's own address.
   */
  trustedProxies: string[];
  /** Listeners whose connections from trusted_proxies begin with a PROXY protocol header (start/proxy-protocol.ts). */
  smtpProxyProtocol: boolean; submissionProxyProtocol: boolean; httpProxyProtocol: boolean;
  /** DKIM signatures (and the distinct body hashes they need) verified per received message; the rest are ignored (RFC 6376 6.1). */
  dkimMaxSignatures: number;
  /** SMTP connections open at once from one network (an IPv4 /24, an IPv6 /64), per listener; more get 421. */
  smtpMaxClientsPerNetwork: number;
  /** Of smtp_max_clients, the slots only clients that delivered mail before may take (default a fifth). */
  smtpReservedClients: number;
  /**
   * Memory all uploads in flight may hold at once (MiB): drafts' files and sends' JSON bodies over 1 MiB; an
   * upload that would go past it gets 429 (http/body-memory.ts).
   */
  uploadMemoryMb: number;
  /** Days an email stays in the Trash before the nightly retention job deletes it for good; 0 = until emptied. */
  trashDays: number;
  /** DNS blocklists the client address is looked up in at RCPT (smtp/door.ts), each refusing or only scoring. */
  dnsbl: DnsblZone[];
  /** What a listing in a `dnsbl` zone written without `=refuse` or `=score` does. */
  dnsblAction: 'refuse' | 'score';
  /** URI blocklists the domains of links in a received message are looked up in (evidence only). */
  uribl: string[];
  /** How long one blocklist lookup may take (ms); past it the client or link counts as not listed. */
  dnsblTimeout: number;
  /** Which filter judges received mail: the built-in one, a local rspamd, or none. */
  spamFilter: 'builtin' | 'rspamd' | 'off';
  /** rspamd's normal worker, asked POST /checkv2 for every received message when spam_filter is rspamd. */
  rspamdUrl: string;
  /** rspamd's controller, told the owner's corrections (POST /learnspam, /learnham). */
  rspamdControllerUrl: string;
  /** The controller's password (its Password header); null when the box is one of the controller's secure_ip. */
  rspamdPassword: string | null;
  /** Certificates by ACME (src/acme/) for the hostname and each ready domain's mta-sts.<domain>. */
  acme: boolean;
  /** The ACME server's directory URL; Let's Encrypt's production one unless set. */
  acmeDirectory: string;
  /** The contact the ACME account is registered with; null registers none. */
  acmeEmail: string | null;
  /** Where HTTP-01 challenges are answered (on smtp_host); 0 = no challenge listener. */
  acmeHttpPort: number;
  /** An extra CA (PEM) to trust when talking to the ACME server: a private ACME server, Pebble in tests. */
  acmeCaFile: string | null;
  /** The dashboard and API over HTTPS (on smtp_host) with the box's certificate; 0 = off. */
  httpsPort: number;
  /** A PEM file of CAs trusted besides the system's for outbound TLS (MTA-STS, policy fetches, TLS reports). */
  tlsCaFile: string | null;
  /**
   * The port MTA-STS policies are fetched from, by outbound delivery and by the checks of the box's own policies:
   * 443 (RFC 8461 3.3); other values are a test knob and need allow_private_delivery.
   */
  mtaStsPort: number;
  /** Days the audit log keeps a row (0 keeps forever); the hourly housekeeping prunes older ones. */
  retentionAuditDays: number;
}
