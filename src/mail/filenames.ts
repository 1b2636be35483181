// Attachment file names from received mail are the sender's text (catalogue F7, API-11): mailparser hands
// over "../../etc/passwd", absolute paths, NUL and bidi tricks unchanged. Stored names keep only the last
// path part, without control or bidi-override characters, trimmed, at most 255 UTF-8 bytes (keeping the
// extension), and never empty. Files are stored by id, never by this name.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// Overrides and isolates that make "exe.txt" display as "txt.exe" (U+202A-202E, U+2066-2069), and marks.
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const MAX_BYTES = 255;

export function safeFilename(name: string | undefined | null, fallback = 'attachment'): string {
  let clean = (name ?? '').normalize('NFC').replace(CONTROL, '').replace(BIDI, '');
  clean = clean.split(/[/\\]/).pop() ?? '';
  clean = clean.replace(/^[\s.]+|[\s.]+$/g, '');
  if (!clean) return fallback;
  if (Buffer.byteLength(clean) <= MAX_BYTES) return clean;
  const dot = clean.lastIndexOf('.');
  const ext = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : '';
  let stem = clean.slice(0, clean.length - ext.length);
  while (Buffer.byteLength(stem + ext) > MAX_BYTES) stem = [...stem].slice(0, -1).join('');
  return stem + ext;
}
