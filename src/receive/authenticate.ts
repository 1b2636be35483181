// Authenticates a received message with mailauth (SPF for the client IP, HELO and MAIL FROM; DKIM; DMARC;
// ARC) through the box's configured resolvers, and reduces the outcome to verdicts that classification reads
// and the email record shows. It makes the Authentication-Results header; it does no parsing of its own.
import './dkim-keys.ts'; // before mailauth loads: its verifiers take getPublicKey when they are first required
import { authenticate as mailauth } from 'mailauth';
import type { DnsLookup } from '../dns/cache.ts';
import { headerEnd } from '../mail/headers.ts';
import { capSignatures, DEFAULT_MAX_SIGNATURES } from './signature-cap.ts';

export interface AuthVerdicts {
  /** pass, fail, softfail, neutral, none, temperror or permerror, for the MAIL FROM (or HELO) domain. */
  spf: { result: string; domain: string | null };
  /** pass when any signature verified; `domains` are the domains of the signatures that did. */
  dkim: { result: string; domains: string[] };
  /** The From domain's policy (`reject`, `quarantine`, `none`) when it publishes one. */
  dmarc: { result: string; domain: string | null; policy: string | null; reason?: string };
  arc: { result: string };
}

export interface Authenticated {
  verdicts: AuthVerdicts;
  /** Our Authentication-Results (and Received-SPF) header lines, CRLF-terminated. */
  headers: string;
  /** Set when signatures were left unchecked (signature-cap.ts): how many DKIM signatures were checked of how many. */
  unchecked?: { checked: number; of: number; arc: boolean };
}

export interface AuthContext {
  ip: string;
  helo: string;
  mailFrom: string;
  hostname: string;
  dns: DnsLookup;
  /** DKIM signatures checked at most (config dkim_max_signatures; RFC 6376 6.1). */
  maxSignatures?: number;
}

export async function authenticate(raw: Buffer, ctx: AuthContext): Promise<Authenticated> {
  const resolver = (name: string, type: string) => ctx.dns.resolve(name, type) as Promise<string[][]>;
  const capped = capSignatures(raw, ctx.maxSignatures ?? DEFAULT_MAX_SIGNATURES);
  const result = await mailauth(capped.input === raw ? whatMailauthReads(raw) : capped.input, {
    ip: ctx.ip,
    helo: ctx.helo,
    sender: ctx.mailFrom,
    mta: ctx.hostname,
    resolver,
    disableBimi: true,
  });

  const signatures = result.dkim?.results ?? [];
  const passed = signatures.filter((r) => r.status?.result === 'pass');
  // mailauth reports a body that no longer matches its signed hash as `neutral`; RFC 6376 6.1.3 makes that a
  // verification failure (PERMFAIL), and for the owner it is one: the content was changed after signing.
  const resultOf = (r: (typeof signatures)[number]) => (r.status?.comment === 'body hash did not verify' ? 'fail' : (r.status?.result ?? 'none'));
  const dkim = { result: passed.length ? 'pass' : signatures[0] ? resultOf(signatures[0]) : 'none', domains: passed.map((r) => r.signingDomain).filter((d): d is string => !!d) };

  const spf = result.spf ? { result: result.spf.status?.result ?? 'none', domain: result.spf.domain ?? null } : { result: 'none', domain: null };

  // Catalogue F5: with no From, several From fields or several addresses in one, mailauth gives no DMARC
  // verdict at all; the mail cannot be tied to one domain, so it counts as failing DMARC.
  const fromCount = result.dkim?.headerFrom?.length ?? 0;
  const dmarc = result.dmarc
    ? { result: result.dmarc.status?.result ?? 'none', domain: result.dmarc.domain ?? null, policy: result.dmarc.policy ?? null }
    : { result: 'fail', domain: null, policy: null, reason: fromCount === 0 ? 'no From address' : 'more than one From address' };

  const arc = { result: result.arc ? (result.arc.status?.result ?? 'none') : 'none' };

  let headers = result.headers;
  if (!result.dmarc) {
    // mailauth left DMARC out of its header; say what we decided.
    headers = headers.replace(/(Authentication-Results: [^;]+;)/, `$1\r\n dmarc=fail (${dmarc.reason}) header.from=${fromCount === 0 ? 'none' : 'multiple'};`);
  }
  if (capped.checked === capped.signatures && !capped.arcLeftOut) return { verdicts: { spf, dkim, dmarc, arc }, headers };
  // RFC 8601 2.2: a comment after the authserv-id says what was left unchecked, for whoever reads the header.
  const note = [capped.checked < capped.signatures ? `${capped.checked} of ${capped.signatures} DKIM signatures checked` : '', capped.arcLeftOut ? 'ARC not checked' : ''].filter(Boolean).join(', ');
  headers = headers.replace(/^(Authentication-Results: [^;\s]+)/m, `$1 (${note})`);
  return { verdicts: { spf, dkim, dmarc, arc }, headers, unchecked: { checked: capped.checked, of: capped.signatures, arc: capped.arcLeftOut } };
}

/**
 * mailauth reads the body only to hash it for a DKIM-Signature or an ARC set (and for ARC sealing, which we do
 * not ask for); SPF and DMARC take the envelope and the header section. Unsigned mail (and every message of the
 * inbound benchmark) is handed over without its body, which spares mailauth a pass over every body byte in
 * JavaScript. The test is conservative: those field names anywhere in the section, in any case, mean the whole
 * message. The cut is at or after the blank line mailauth itself would find (it also ends the section at
 * LF CR LF, which headerEnd does not), so mailauth sees the same header fields either way.
 */
export function whatMailauthReads(raw: Buffer): Buffer {
  const end = headerEnd(raw);
  if (end >= raw.length || SIGNED.test(raw.toString('latin1', 0, end))) return raw;
  return raw.subarray(0, end + 4);
}

const SIGNED = /dkim-signature|arc-/i;
