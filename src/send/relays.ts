// Which relay carries a message, if any (DESIGN relays): the first [[relay]] whose match names the
// sending domain or the recipient's domain (each with its subdomains), else relay_url, else none: straight to
// the recipient's MX. It parses the relay URLs once; it must not look names up or open sockets.
import type { RelayMatch, RelayRule } from '../config/config.ts';

export interface Relay {
  /** `relay[0]`, `relay[1]` ... in the config's order, or `relay_url`: the queue's destination. */
  id: string;
  /** The connection pool's key: the id in this generation of the config, so a reload never reuses a session of the old one. */
  pool: string;
  host: string;
  port: number;
  /** Implicit TLS (smtps://). */
  secure: boolean;
  user: string;
  pass: string;
  /** [[relay]]: STARTTLS must succeed before anything is sent; relay_url keeps Postfix's "may". */
  requireTls: boolean;
  /** The relay's certificate must verify against the system's CAs. */
  verifyTls: boolean;
}

export interface Relays {
  rules: Array<{ match: RelayMatch[]; relay: Relay }>;
  fallback: Relay | null;
}

/** smtp://user:pass@host:port (STARTTLS, AUTH), smtps://... (implicit TLS), as config/config.ts has checked them. */
export function parseRelayUrl(raw: string, id: string, strict: { requireTls: boolean; verifyTls: boolean }, generation = 0): Relay {
  const url = new URL(raw);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new TypeError(`relay URL must be smtp: or smtps:, got ${url.protocol}`);
  const secure = url.protocol === 'smtps:';
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const host = bare.toLowerCase().replace(/\.$/, '');
  if (!host) throw new TypeError('relay URL has no host');
  return {
    id,
    pool: `${id}#${generation}`,
    host,
    // Submission ports, as nodemailer reads such URLs: 587 with STARTTLS, 465 with implicit TLS (RFC 8314).
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    user: decodeURIComponent(url.username),
    pass: decodeURIComponent(url.password),
    ...strict,
  };
}

let generations = 0;

export function relaysFrom(relayUrl: string | null | undefined, rules: RelayRule[] = []): Relays {
  const generation = ++generations;
  return {
    rules: rules.map((r, i) => ({ match: r.match, relay: parseRelayUrl(r.url, `relay[${i}]`, { requireTls: true, verifyTls: r.tlsVerify }, generation) })),
    // The global smarthost predates [[relay]] and keeps its behaviour: TLS when offered, any certificate.
    fallback: relayUrl ? parseRelayUrl(relayUrl, 'relay_url', { requireTls: false, verifyTls: false }, generation) : null,
  };
}

const within = (domain: string, parent: string) => domain === parent || domain.endsWith(`.${parent}`);

/** The relay for mail from `senderDomain` (null: unknown, only recipient rules can match) to `recipientDomain`. */
export function relayFor(relays: Relays, senderDomain: string | null, recipientDomain: string): Relay | null {
  const sender = senderDomain?.toLowerCase() ?? null;
  const recipient = recipientDomain.toLowerCase();
  for (const { match, relay } of relays.rules) {
    const hit = match.some((m) => (m.on === 'any' ? true : m.on === 'sender' ? sender !== null && within(sender, m.domain) : within(recipient, m.domain)));
    if (hit) return relay;
  }
  return relays.fallback;
}
