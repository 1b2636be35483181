// The headers of a file download (DESIGN.md "attachment download", catalogue API-11 and API-15): always
// `attachment`, never inline, with a file name that cannot inject a header, climb a path or spoof its
// extension. Pure string work; it knows nothing of where the bytes come from.
import contentTypes from 'content-type';

// C0 and C1 controls (CR, LF, NUL among them) and DEL.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// Marks, embeddings, overrides and isolates that make "exe.txt" display as "txt.exe".
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// A UTF-16 half without its other half cannot be percent-encoded (encodeURIComponent throws).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const MAX_CHARS = 200;

/** The name as offered: last path part, no controls, bidi marks or quotes, never empty. */
export function downloadName(name: string, fallback = 'attachment'): string {
  let clean = name.replace(LONE_SURROGATE, '\ufffd').normalize('NFC').replace(CONTROL, '').replace(BIDI, '').replace(/"/g, '');
  clean = (clean.split(/[/\\]/).pop() ?? '').replace(/^[\s.]+|[\s.]+$/g, '');
  if (!clean) return fallback;
  return [...clean].length > MAX_CHARS ? [...clean].slice(-MAX_CHARS).join('') : clean;
}

/**
 * `attachment; filename="<ascii-safe>"; filename*=UTF-8''<pct-encoded>` (RFC 6266 4.3, RFC 8187 3.2.1):
 * the quoted fallback has every non-ASCII character and `%` (which some browsers would decode) replaced by
 * `_`; clients that read filename* get the name exactly.
 */
export function attachmentDisposition(name: string, fallback?: string): string {
  const clean = downloadName(name, fallback);
  const ascii = clean.replace(/[^\x20-\x7e]|%/g, '_');
  // RFC 8187 attr-char leaves ' ( ) * to be encoded, which encodeURIComponent does not do.
  const encoded = encodeURIComponent(clean).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** The stored media type (with its parameters) when it is a well-formed one, else application/octet-stream. */
export function downloadType(contentType: string): string {
  try {
    return contentType.length <= 255 ? contentTypes.format(contentTypes.parse(contentType.trim())) : 'application/octet-stream';
  } catch {
    return 'application/octet-stream';
  }
}
