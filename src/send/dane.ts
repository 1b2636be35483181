// DANE for SMTP (RFC 7672): the TLSA records of an MX host (`_25._tcp.<host>`), used only when the configured
// resolver vouches for them with the AD bit, and whether a peer's certificate chain matches them: DANE-EE
// (usage 3, the server's own key or certificate, no name or date checks, 3.1.1) and DANE-TA (usage 2, a trust
// anchor in the chain the server sent, with the name checked against the MX host, 3.1.2). PKIX usages 0 and 1
// are unusable for SMTP (3.1.3). It must not connect anywhere.
import { createHash, X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import type { TlsaData } from 'dns-packet';
import { rawQuery } from '../dns/dnssec.ts';

export type TlsaRecord = Pick<TlsaData, 'usage' | 'selector' | 'matchingType'> & { data: Buffer };

/** `none`: no usable, authenticated TLSA records (opportunistic as before); `error`: the TLSA lookup of a secure host failed. */
export type DaneLookup = { kind: 'none' } | { kind: 'dane'; records: TlsaRecord[] } | { kind: 'error'; reason: string };

const USABLE = (r: TlsaRecord) => (r.usage === 2 || r.usage === 3) && (r.selector === 0 || r.selector === 1) && r.matchingType <= 2;

export async function lookupTlsa(servers: string[], host: string, timeoutMs?: number): Promise<DaneLookup> {
  // RFC 7672 2.2.2: TLSA records are looked for only when the host's address records are secure (AD). An
  // unsigned zone (most of them) is never held to DANE, and a resolver that drops the question costs no mail.
  const address = await rawQuery(servers, host, 'A', timeoutMs).catch(() => null);
  if (!address?.authenticated) return { kind: 'none' };
  const name = `_25._tcp.${host}`;
  let answer;
  try {
    answer = await rawQuery(servers, name, 'TLSA', timeoutMs);
  } catch (err) {
    return { kind: 'error', reason: `TLSA lookup for ${name} failed (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  // Without AD the records could be anyone's: RFC 7672 2.2 uses only "secure" TLSA RRsets.
  if (!answer.authenticated) return { kind: 'none' };
  const records = answer.answers.flatMap((a) => (a.type === 'TLSA' ? [{ usage: a.data.usage, selector: a.data.selector, matchingType: a.data.matchingType, data: a.data.certificate }] : []));
  // RFC 7672 2.2: TLSA records that are all unusable mean opportunistic TLS, as without any.
  const usable = records.filter(USABLE);
  return usable.length > 0 ? { kind: 'dane', records: usable } : { kind: 'none' };
}

/** TLSA presentation form, for the TLS report's policy-string ("3 1 1 ab12..."). */
export const tlsaText = (r: TlsaRecord) => `${r.usage} ${r.selector} ${r.matchingType} ${r.data.toString('hex')}`;

/** Null when the chain matches a record (RFC 7672 3.1); else why not. */
export function daneMismatch(records: TlsaRecord[], socket: tls.TLSSocket, host: string): string | null {
  const chain = peerChain(socket);
  const leaf = chain[0];
  if (!leaf) return `${host} presented no certificate`;
  if (records.some((r) => r.usage === 3 && matches(r, leaf))) return null;
  // DANE-TA: an issuer the server sent matches, each link below it is signed by the next, and the leaf names the host.
  for (let i = 1; i < chain.length; i++) {
    if (!records.some((r) => r.usage === 2 && matches(r, chain[i]!))) continue;
    const linked = chain.slice(0, i).every((cert, k) => cert.checkIssued(chain[k + 1]!) && cert.verify(chain[k + 1]!.publicKey));
    if (!linked) return `the certificate of ${host} does not chain to the trust anchor its TLSA record names`;
    const wrongName = tls.checkServerIdentity(host, socket.getPeerCertificate());
    return wrongName ? `certificate not valid for ${host}: ${wrongName.message}` : null;
  }
  return `the certificate of ${host} matches none of its TLSA records`;
}

function matches(record: TlsaRecord, cert: X509Certificate): boolean {
  // Selector 0: the whole certificate (DER); 1: its SubjectPublicKeyInfo (DER).
  const selected = record.selector === 0 ? cert.raw : cert.publicKey.export({ type: 'spki', format: 'der' });
  const digest = record.matchingType === 0 ? selected : createHash(record.matchingType === 1 ? 'sha256' : 'sha512').update(selected).digest();
  return digest.equals(record.data);
}

/** The certificates the server sent, leaf first (Node links them through issuerCertificate; a self-signed one points at itself). */
function peerChain(socket: tls.TLSSocket): X509Certificate[] {
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  let cert = socket.getPeerCertificate(true) as tls.DetailedPeerCertificate | undefined;
  while (cert?.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(new X509Certificate(cert.raw));
    cert = cert.issuerCertificate;
  }
  return chain;
}
