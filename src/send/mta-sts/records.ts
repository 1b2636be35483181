// The two TXT records a recipient domain publishes for outbound TLS: `_mta-sts.<domain>` (RFC 8461 3.1) and
// `_smtp._tls.<domain>` (RFC 8460 3). Parsing only: it must not look anything up.
import { stsRecordId } from '../../dns/mta-sts-policy.ts';

/** RFC 8461 3.1: `v=STSv1; id=...`. Null when the TXT set holds no usable record (none, several, or broken). */
export function parseStsRecord(txts: string[]): { id: string } | null {
  const candidates = txts.filter((t) => /^v=STSv1\s*(;|$)/.test(t));
  // "If multiple TXT records for _mta-sts are returned by the resolver, records that do not begin with
  // v=STSv1; are discarded. If the number of resulting records is not one, ... no available policy."
  if (candidates.length !== 1) return null;
  const id = stsRecordId(candidates[0]!);
  return id ? { id } : null;
}

/** RFC 8460 3: the rua URIs of `v=TLSRPTv1; rua=mailto:...,https:...`; null when there is no single valid record. */
export function parseTlsRptRecord(txts: string[]): { rua: string[] } | null {
  const candidates = txts.filter((t) => /^v=TLSRPTv1\s*(;|$)/.test(t));
  if (candidates.length !== 1) return null;
  const rua = fieldsOf(candidates[0]!).get('rua');
  if (!rua) return null;
  const uris = rua.split(',').map((u) => u.trim()).filter((u) => /^(mailto:|https:)/i.test(u));
  return uris.length > 0 ? { rua: uris } : null;
}

/** `key=value` pairs separated by `;` with optional whitespace (RFC 8461 3.1 sts-text-record). */
function fieldsOf(record: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of record.split(';')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const key = part.slice(0, at).trim();
    if (!fields.has(key)) fields.set(key, part.slice(at + 1).trim());
  }
  return fields;
}

/** Joins each TXT record's character-strings, as node's resolveTxt returns them split. */
export const joinTxt = (records: string[][]): string[] => records.map((r) => r.join(''));
