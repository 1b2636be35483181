// How mail is packed at rest (storage near the message size). A message's text is stored deflated,
// its HTML deflated with the text as the dictionary, and its RFC 5322 bytes deflated with both bodies as
// theirs: the bytes hold the bodies again, so beyond the bodies they cost about their headers. Pure; packing
// runs in the analyze and sign worker threads, unpacking wherever stored mail is read. It decides nothing
// about what is stored where (emails/ does), and never changes a byte of what it is given back.
//
// A packed value is a Buffer: 0x00 0x01, then a zlib stream (RFC 1950) of deflate level PACK_LEVEL; a message
// packed against its bodies is marked 0x00 0x04 instead, for the dictionary is then the bodies as they look on
// the wire, with CRLF line ends and as quoted-printable (bodiesDictionary), or 0x00 0x03 when it is the CRLF
// form alone (lineBodiesDictionary): how a message that carries no quoted-printable is packed, and how all mail
// was packed before the quoted-printable form. A recipient's
// own copy of a personalised email may instead be packed against another recipient's copy of the same email
// (the email's first, packed against its bodies): 0x00 0x02, that copy's delivery id in 6 bytes, then the zlib
// stream; the copies differ only in a few links and their signatures, so such a copy costs a few hundred bytes.
// Values written before packing read as they are, and nothing else marks them:
// - a stored message (email_contents.raw, delivery_contents.raw, inbound_reports.raw) never starts with NUL:
//   the box's stored messages start with its own Received or DKIM-Signature field (RFC 5322: a header field
//   name is printable ASCII), and packMessage packs any that would;
// - a body (email_contents.text_body, html_body) was stored as TEXT (a string here), a packed one is a BLOB.
// The zlib header says whether a dictionary was used and names it (Adler-32), and the trailer checks the
// result, so a value read against other bodies, or damaged, throws instead of reading as other bytes. Bodies
// are written once and never changed (emails/store.ts), which is what lets a message's bytes depend on them.
import { promisify } from 'node:util';
import { deflateSync, inflate, inflateSync } from 'node:zlib';
import { quotedPrintable, wireLines } from './wire-form.ts';

/**
 * zlib's default. On the storage benchmark's 10 KB messages (scripts/bench/storage.ts: 10,379 bytes with 8,799 of
 * text and HTML) the three values take 4,977 bytes at level 6 for 164-192 µs of a worker thread's CPU; level 1
 * takes 5,190 bytes (+4 %) for 122-133 µs, level 3 5,107 for 130-143 µs, level 9 the same as 6 for more. Mail
 * is packed once and kept for years, so the ~50 µs buy disk for good; unpacking costs ~40 µs at every level.
 */
export const PACK_LEVEL = 6;

const MARK = 0x00;
const ZLIB = 0x01;
const AGAINST_COPY = 0x02;
/**
 * A message packed against its bodies' CRLF lines and quoted-printable; 0x03 against their CRLF lines alone (a
 * message without quoted-printable, or any message packed before); 0x01 with a dictionary against the bodies as
 * stored, as mail was packed at first.
 */
const AGAINST_ENCODED_BODIES = 0x04;
const AGAINST_WIRE_BODIES = 0x03;
/** The bytes of the other copy's id in an AGAINST_COPY value. */
const COPY_ID_BYTES = 6;
/** deflate's window: a dictionary's last 32 KiB are all it can refer to. */
const WINDOW = 32 * 1024;
/** Above this many packed bytes a message is inflated on libuv's pool, off the calling thread. */
const ASYNC_ABOVE = 64 * 1024;
const inflateAsync = promisify(inflate);

/** A body as stored: a string (written before packing, or not smaller packed), a packed Buffer, or null. */
export type StoredBody = string | Uint8Array | null;

/** A message's two bodies as stored. */
export interface StoredBodies {
  text: StoredBody;
  html: StoredBody;
}

export function isPacked(value: Uint8Array): boolean {
  return value.length > 4 && value[0] === MARK && (value[1] === ZLIB || value[1] === AGAINST_WIRE_BODIES || value[1] === AGAINST_ENCODED_BODIES);
}

function pack(bytes: Uint8Array, dictionary: Uint8Array | null, mark = ZLIB): Buffer {
  const z = deflateSync(bytes, { level: PACK_LEVEL, ...(dictionary?.length ? { dictionary } : {}) });
  const out = Buffer.allocUnsafe(z.length + 2);
  out[0] = MARK;
  out[1] = mark;
  z.copy(out, 2);
  return out;
}

/** The zlib header's FDICT bit (RFC 1950 2.2): the stream was made against a dictionary. */
const needsDictionary = (packed: Uint8Array) => (packed[3] & 0x20) !== 0;

function unpack(packed: Uint8Array, dictionary: Uint8Array | null): Buffer {
  const stream = packed.subarray(2);
  if (!needsDictionary(packed)) return inflateSync(stream);
  if (!dictionary) throw new Error('packed mail: this value was packed against its bodies, which were not given');
  return inflateSync(stream, { dictionary });
}

const tail = (bytes: Uint8Array) => (bytes.length > WINDOW ? bytes.subarray(bytes.length - WINDOW) : bytes);

/** The UTF-8 of its text, then of its HTML (the last 32 KiB): what a message was packed against at first (0x01). */
function storedBodiesDictionary(text: Uint8Array | null, html: Uint8Array | null): Buffer | null {
  if (!text?.length && !html?.length) return null;
  if (!html?.length) return Buffer.from(tail(text!));
  if (!text?.length || html.length >= WINDOW) return Buffer.from(tail(html));
  return Buffer.from(tail(Buffer.concat([text, html])));
}

const latin1Tail = (s: string) => Buffer.from(s.length > WINDOW ? s.slice(s.length - WINDOW) : s, 'latin1');

/**
 * What a message without quoted-printable is packed against (0x03), and all mail was before: its text, then its
 * HTML, each with its lines ended as on the wire, the last 32 KiB. In a message that carries quoted-printable,
 * its soft line breaks and escapes began a new match every line: a signed 10 KB letter's bytes cost 500-780
 * bytes beside its bodies, 1,450 when its HTML is personalised.
 */
export function lineBodiesDictionary(text: Uint8Array | null, html: Uint8Array | null): Buffer | null {
  const wire = wireLines(text) + wireLines(html);
  return wire ? latin1Tail(wire) : null;
}

/**
 * What a message's bytes are packed against: its text, then its HTML, each with its lines ended as on the wire,
 * then each again as quoted-printable where that differs, the last 32 KiB (for larger bodies, the
 * quoted-printable forms are what is kept).
 * A message carries a body in one of the two forms (or base64, which neither helps), and deflate finds it in
 * either: on the storage benchmark's letters, 775 bytes beside the bodies instead of 918, and 921 instead of
 * 1,449 for a personalised HTML letter's first copy (scripts/bench/storage.ts). One copy into bytes, of the
 * tail alone: it runs for every message packed and every one read back.
 */
export function bodiesDictionary(text: Uint8Array | null, html: Uint8Array | null): Buffer | null {
  const t = wireLines(text);
  const h = wireLines(html);
  const encoded = (lines: string) => {
    const qp = quotedPrintable(lines);
    return qp === lines ? '' : qp;
  };
  const wire = t + h + encoded(t) + encoded(h);
  return wire ? latin1Tail(wire) : null;
}

/** A message's bodies as UTF-8: what its bytes are packed against (packMessage). */
export interface BodyBytes {
  text: Uint8Array | null;
  html: Uint8Array | null;
}

export const bodyBytesOf = (text: string | null, html: string | null): { text: Buffer | null; html: Buffer | null } => ({
  text: text === null ? null : Buffer.from(text, 'utf8'),
  html: html === null ? null : Buffer.from(html, 'utf8'),
});

/**
 * The bodies as they are to be stored, each packed unless that would not make it smaller, and their bytes, which
 * the message's bytes are then packed against (packMessage).
 */
export function packBodies(text: string | null, html: string | null): { text: string | Buffer | null; html: string | Buffer | null; bytes: BodyBytes } {
  const bytes = bodyBytesOf(text, html);
  const { text: t, html: h } = bytes;
  const smaller = (plain: string, utf8: Buffer, packed: Buffer) => (packed.length < utf8.length ? packed : plain);
  return {
    text: t === null ? null : smaller(text!, t, pack(t, null)),
    html: h === null ? null : smaller(html!, h, pack(h, t && tail(t))),
    bytes,
  };
}

/**
 * Whether a message names the quoted-printable transfer encoding anywhere, in any case (the header's value is
 * case-insensitive) but for a mixed-case "rintable", which only packs the message a little less tightly.
 * Searched for natively, as two byte strings: a few µs for 10 KB.
 */
function carriesQuotedPrintable(raw: Uint8Array): boolean {
  const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  for (const end of ['rintable', 'RINTABLE']) {
    for (let at = bytes.indexOf(end); at >= 0; at = bytes.indexOf(end, at + 1)) {
      if (at >= 8 && bytes.toString('latin1', at - 8, at).toLowerCase() === 'quoted-p') return true;
    }
  }
  return false;
}

/**
 * A message's bytes packed (always: a stored message that starts with NUL would otherwise read as packed),
 * against its bodies when given: their quoted-printable forms only when the message carries quoted-printable,
 * for otherwise they could only cost time. A 10 KB smtp-source message took 90 µs to make the dictionary of both
 * forms and 95 to deflate against it, against 24 and 61 with its CRLF lines alone, for the same bytes.
 */
export function packMessage(raw: Uint8Array, bodies: BodyBytes | null): Buffer {
  if (!bodies) return pack(raw, null, ZLIB);
  const encoded = carriesQuotedPrintable(raw);
  const dictionary = encoded ? bodiesDictionary(bodies.text, bodies.html) : lineBodiesDictionary(bodies.text, bodies.html);
  return pack(raw, dictionary, !dictionary?.length ? ZLIB : encoded ? AGAINST_ENCODED_BODIES : AGAINST_WIRE_BODIES);
}

/**
 * What of a copy another copy is packed against: its last 32 KiB (all deflate can refer to), copied out, so a
 * large message is not posted whole to the signing thread for each of its recipients.
 */
export const copyDictionary = (raw: Uint8Array): Buffer => Buffer.from(tail(raw));

/** A copy's bytes packed against another copy of the same email (given whole or as its copyDictionary), stored under its delivery id. */
export function packAgainstCopy(raw: Uint8Array, copy: { id: number; raw: Uint8Array }): Buffer {
  const z = deflateSync(raw, { level: PACK_LEVEL, dictionary: tail(copy.raw) });
  const out = Buffer.allocUnsafe(2 + COPY_ID_BYTES + z.length);
  out[0] = MARK;
  out[1] = AGAINST_COPY;
  out.writeUIntBE(copy.id, 2, COPY_ID_BYTES);
  z.copy(out, 2 + COPY_ID_BYTES);
  return out;
}

/** The delivery id of the copy a stored copy was packed against, or null when it was not. */
export function copyPackedAgainst(stored: Uint8Array): number | null {
  if (stored.length <= 2 + COPY_ID_BYTES || stored[0] !== MARK || stored[1] !== AGAINST_COPY) return null;
  return Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).readUIntBE(2, COPY_ID_BYTES);
}

/** A copy packed against another (packAgainstCopy), given that copy's bytes unpacked. */
export async function unpackAgainstCopy(stored: Uint8Array, copy: Uint8Array): Promise<Buffer> {
  const stream = stored.subarray(2 + COPY_ID_BYTES);
  return stream.length > ASYNC_ABOVE ? inflateAsync(stream, { dictionary: tail(copy) }) : inflateSync(stream, { dictionary: tail(copy) });
}

function refuseAgainstCopy(stored: Uint8Array): void {
  if (copyPackedAgainst(stored) !== null) throw new Error('packed mail: this copy was packed against another copy, which was not given');
}

/** A body's UTF-8 as stored, unpacked; `text` is the dictionary an HTML body may have been packed against. */
function bodyBytes(stored: StoredBody, text: Uint8Array | null): Buffer | null {
  if (stored === null) return null;
  if (typeof stored === 'string') return Buffer.from(stored, 'utf8');
  return isPacked(stored) ? unpack(stored, text && tail(text)) : Buffer.from(stored);
}

export function unpackText(stored: StoredBody): string | null {
  if (stored === null || typeof stored === 'string') return stored;
  return bodyBytes(stored, null)!.toString('utf8');
}

/** The HTML body; its text is needed only when the HTML was packed against it. */
export function unpackHtml(stored: StoredBody, text: StoredBody): string | null {
  if (stored === null || typeof stored === 'string') return stored;
  const dictionary = isPacked(stored) && needsDictionary(stored) ? bodyBytes(text, null) : null;
  return bodyBytes(stored, dictionary)!.toString('utf8');
}

export function unpackBodies(stored: StoredBodies): { text: string | null; html: string | null } {
  return { text: unpackText(stored.text), html: unpackHtml(stored.html, stored.text) };
}

/** The dictionary a packed message was made against: its bodies' wire forms (0x04), CRLF lines (0x03), or as stored (0x01). */
function messageDictionary(stored: Uint8Array, bodies: StoredBodies | null): Buffer | null {
  if (!bodies || !needsDictionary(stored)) return null;
  const text = bodyBytes(bodies.text, null);
  const html = bodyBytes(bodies.html, text);
  if (stored[1] === AGAINST_ENCODED_BODIES) return bodiesDictionary(text, html);
  return stored[1] === AGAINST_WIRE_BODIES ? lineBodiesDictionary(text, html) : storedBodiesDictionary(text, html);
}

/** A stored message's bytes, exactly as they were given to packMessage (or as stored before packing). */
export function unpackMessage(stored: Uint8Array, bodies: StoredBodies | null): Buffer {
  refuseAgainstCopy(stored);
  if (!isPacked(stored)) return Buffer.isBuffer(stored) ? stored : Buffer.from(stored);
  return unpack(stored, messageDictionary(stored, bodies));
}

/** unpackMessage for the event loop: a large message is inflated on libuv's thread pool. */
export async function unpackMessageAsync(stored: Uint8Array, bodies: StoredBodies | null): Promise<Buffer> {
  refuseAgainstCopy(stored);
  if (!isPacked(stored) || stored.length <= ASYNC_ABOVE) return unpackMessage(stored, bodies);
  const dictionary = messageDictionary(stored, bodies);
  if (needsDictionary(stored) && !dictionary) throw new Error('packed mail: this value was packed against its bodies, which were not given');
  return inflateAsync(stored.subarray(2), dictionary ? { dictionary } : {});
}

/** A message ready to be stored: its bytes packed against its bodies, the bodies as stored, its size unpacked. */
export interface PackedMail {
  raw: Buffer;
  size: number;
  text: string | Buffer | null;
  html: string | Buffer | null;
  /** The bytes packed alone, when asked for: a report kept without bodies (inbound_reports.raw). */
  alone: Buffer | null;
}

/** Packs a message whose bodies (as read from it) are stored beside it. */
export function packMail(raw: Uint8Array, text: string | null, html: string | null, opts: { alone?: boolean } = {}): PackedMail {
  const bodies = packBodies(text, html);
  return { raw: packMessage(raw, bodies.bytes), size: raw.length, text: bodies.text, html: bodies.html, alone: opts.alone ? packMessage(raw, null) : null };
}
