// Which of a received message's DKIM signatures (and ARC sets) mailauth is given to check, so that no message
// costs more than a bounded amount of verification (catalogue RES-06c, RES-09). mailauth 4.13.3 checks every
// DKIM-Signature, with one body hash per distinct body canonicalization, hash and l= (dkim-verifier.js
// messageHeaders), and no option to stop: 500 signatures with their own l= over 1.1 MB took 19 s of CPU. And
// for each signature it looks up every name of h= among all header fields (tools.js getSigningHeaderLines):
// 10 signatures of 20,000 names over 9,000 fields took 8 s. RFC 6376 6.1 lets a verifier try signatures in
// any order, those matching the From domain first, and limit how many it tries. Pure; runs in the analyze
// worker, on the bytes mailauth reads only: the stored message keeps every field.
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';

/** The config's default (dkim_max_signatures). */
export const DEFAULT_MAX_SIGNATURES = 10;
/** Distinct body hashes (canonicalization, hash, l=) among the signatures checked; real mail uses one or two. */
export const MAX_BODY_HASHES = 3;
/**
 * Names of h= times header fields, summed over the signatures checked (and the last ARC-Message-Signature):
 * what mailauth's look-up of signed fields costs, about 4-5 ns each, so a few ms at most. Real mail: 10-40
 * names over 20-200 fields per signature.
 */
export const MAX_SIGNED_LOOKUPS = 1_000_000;
/**
 * A signature field bigger than this is ignored unread: real ones are under 2 KB (an RSA-4096 b= is 684
 * characters, h= a few dozen names), and mailauth's parser costs about 0.1 µs a byte.
 */
export const MAX_SIGNATURE_BYTES = 8 * 1024;

/** What mailauth reads of the message, and how many signatures it was given of how many. */
export interface Capped {
  input: Buffer | Readable;
  /** DKIM-Signature fields in the message. */
  signatures: number;
  /** Those mailauth checks. */
  checked: number;
  /** The ARC sets were left out: the last one's h= alone was past MAX_SIGNED_LOOKUPS. */
  arcLeftOut: boolean;
}

type ParseDkimHeader = (line: Buffer) => { parsed?: Record<string, { value?: unknown } | undefined> };
// mailauth's own parser, so that a signature's body-hash key here is the one mailauth computes.
const parseDkimHeader = createRequire(import.meta.url)('mailauth/lib/parse-dkim-headers.js') as ParseDkimHeader;

/** mailauth's signed-field list when h= is absent (tools.js defaultDKIMFieldNames). */
const DEFAULT_SIGNED_NAMES = 29;
const ARC = new Set(['arc-seal', 'arc-message-signature', 'arc-authentication-results']);
/** A tag's value as far as a quick look tells (for ordering and the ARC instance, never for a bound). */
const TAG = { d: /(?:^|[;:\s])d\s*=\s*([^;\s]+)/i, i: /(?:^|[;:\s])i\s*=\s*([^;\s]+)/i };

interface Field {
  start: number;
  end: number;
  /** As mailauth keys it: the text before the first colon, trimmed, in lower case. */
  key: string;
}

/**
 * `raw` as mailauth should read it: unchanged when its signatures are within the bounds, otherwise with the
 * DKIM-Signature fields past them (and, if need be, the ARC fields) left out of the header section, every
 * other byte as it was, in order. Signatures are taken From-aligned first, then in header order (RFC 6376 6.1).
 * A kept signature whose h= signs DKIM-Signature fields that were left out no longer verifies (RFC 6376 5.4:
 * signing them is rare).
 */
export function capSignatures(raw: Buffer, maxSignatures: number): Capped {
  const end = sectionEnd(raw);
  const head = raw.toString('latin1', 0, end);
  const dkim = head.match(/dkim-signature/gi)?.length ?? 0;
  // Ordinary mail: too few signatures to pass a bound, and too few colons (an upper bound on h= names) times
  // lines (on fields) to pass the look-up bound. A message with no signature at all is left to whatMailauthReads.
  if (dkim <= Math.min(maxSignatures, MAX_BODY_HASHES) && count(head, ':') * (count(head, '\n') + 1) <= MAX_SIGNED_LOOKUPS) {
    return { input: raw, signatures: dkim, checked: dkim, arcLeftOut: false };
  }

  const fields = fieldsOf(head);
  const line = (f: Field) => raw.subarray(f.start, f.end);
  const tag = (f: Field, name: 'd' | 'i') => TAG[name].exec(head.slice(f.start, f.end))?.[1];
  const names = (h: unknown) => (typeof h === 'string' ? h.split(':').filter((n) => n.trim()).length : DEFAULT_SIGNED_NAMES);

  // mailauth checks the ARC-Message-Signature of the last set (the highest i=) as one more signature: its
  // look-ups are counted first, and past the bound (or too big to read) the ARC sets are left out.
  let lastArc: Field | undefined;
  for (const f of fields) if (f.key === 'arc-message-signature' && (!lastArc || Number(tag(f, 'i')) >= Number(tag(lastArc, 'i')))) lastArc = f;
  let spent = 0;
  let arcLeftOut = false;
  if (lastArc) {
    const big = lastArc.end - lastArc.start > MAX_SIGNATURE_BYTES;
    spent = big ? Infinity : names(parseDkimHeader(line(lastArc)).parsed?.h?.value) * fields.length;
    arcLeftOut = spent > MAX_SIGNED_LOOKUPS;
    if (arcLeftOut) spent = 0;
  }

  const signatures = fields.filter((f) => f.key === 'dkim-signature');
  const from = fromDomain(head, fields);
  const aligned = (f: Field) => {
    const d = tag(f, 'd')?.toLowerCase();
    return !!d && !!from && (d === from || from.endsWith(`.${d}`) || d.endsWith(`.${from}`));
  };
  const kept = new Set<Field>();
  const keys = new Set<string>();
  // Each signature read costs mailauth's parse: at most twice as many are read as can be kept.
  const readable = signatures.filter((f) => f.end - f.start <= MAX_SIGNATURE_BYTES);
  const first = new Set(readable.filter(aligned));
  readable.sort((a, b) => Number(first.has(b)) - Number(first.has(a)));
  for (const f of readable.slice(0, 2 * maxSignatures)) {
    if (kept.size >= maxSignatures) break;
    const parsed = parseDkimHeader(line(f)).parsed ?? {};
    const key = bodyHashKey(parsed);
    if (!keys.has(key) && keys.size >= MAX_BODY_HASHES) continue;
    const cost = names(parsed.h?.value) * fields.length;
    if (spent + cost > MAX_SIGNED_LOOKUPS) continue;
    keys.add(key);
    spent += cost;
    kept.add(f);
  }

  const capped = { signatures: signatures.length, checked: kept.size, arcLeftOut };
  if (kept.size === signatures.length && !arcLeftOut) return { input: raw, ...capped };
  const left = fields.filter((f) => (f.key === 'dkim-signature' ? kept.has(f) : !(arcLeftOut && ARC.has(f.key))));
  const section = Buffer.concat([...left.map(line), raw.subarray(fields.at(-1)?.end ?? 0, end)]);
  // Still signed: the body follows, read in place. Nothing left to check: the header section is all mailauth needs.
  const signed = left.some((f) => f.key === 'dkim-signature' || ARC.has(f.key));
  return { input: signed ? Readable.from(chunks(section, raw.subarray(end))) : section, ...capped };
}

/** dkim-verifier.js's bodyHashKey, from the same parsed tags. */
function bodyHashKey(parsed: Record<string, { value?: unknown } | undefined>): string {
  const algorithm = String(parsed.a?.value || '');
  const hashAlgo = algorithm.split('-').pop()!.toLowerCase().trim();
  const canonicalization = String(parsed.c?.value || '');
  const bodyCanon = (canonicalization.split('/')[1] || 'simple').toLowerCase().trim();
  const l = parsed.l?.value;
  const maxBodyLength = l && !isNaN(l as number) ? l : '';
  return [bodyCanon, hashAlgo, maxBodyLength].join(':');
}

/**
 * Where the header section ends as mailauth finds it (message-parser.js): after the first line break that is
 * followed by an empty line, LF or CRLF alike. The whole message when there is none.
 */
function sectionEnd(raw: Buffer): number {
  for (let lf = raw.indexOf(0x0a); lf >= 0; lf = raw.indexOf(0x0a, lf + 1)) {
    if (raw[lf + 1] === 0x0a) return lf + 2;
    if (raw[lf + 1] === 0x0d && raw[lf + 2] === 0x0a) return lf + 3;
  }
  return raw.length;
}

/**
 * The fields of the section as mailauth's parseHeaders splits them: a line that starts with white space
 * (/^\s/ over latin1) continues the field before it; each field runs to the end of its last line break.
 */
function fieldsOf(head: string): Field[] {
  const fields: Field[] = [];
  let pos = 0;
  while (pos < head.length) {
    const first = head.charCodeAt(pos);
    // The blank line that ends the section.
    if (first === 0x0a || (first === 0x0d && head.charCodeAt(pos + 1) === 0x0a)) break;
    const lf = head.indexOf('\n', pos);
    const next = lf < 0 ? head.length : lf + 1;
    const last = fields.at(-1);
    if (last && /\s/.test(head[pos])) last.end = next;
    else fields.push({ start: pos, end: next, key: '' });
    pos = next;
  }
  for (const f of fields) {
    const text = head.slice(f.start, f.end);
    const colon = text.indexOf(':');
    f.key = (colon < 0 ? text : text.slice(0, colon)).trim().toLowerCase();
  }
  return fields;
}

/** The domain of the one address of the one From field, or null. */
function fromDomain(head: string, fields: Field[]): string | null {
  const from = fields.filter((f) => f.key === 'from');
  if (from.length !== 1) return null;
  const text = head.slice(from[0].start, from[0].end);
  const at = text.match(/@/g)?.length === 1 ? /@([a-z0-9.-]+)/i.exec(text) : null;
  return at ? at[1].toLowerCase().replace(/\.$/, '') : null;
}

function count(text: string, char: string): number {
  let n = 0;
  for (let i = text.indexOf(char); i >= 0; i = text.indexOf(char, i + 1)) n++;
  return n;
}

/** The new section, then the body in place, in mailauth's own 64 KiB pieces. */
function* chunks(section: Buffer, body: Buffer): Generator<Buffer> {
  yield section;
  for (let i = 0; i < body.length; i += 64 * 1024) yield body.subarray(i, i + 64 * 1024);
}
