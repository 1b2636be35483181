// Attachment file names from received mail are the sender's text (catalogue F7, API-11): mailparser hands
// over "../../etc/passwd", absolute paths, NUL and bidi tricks unchanged. Stored names keep only the last
// path part, without control or bidi-override characters, trimmed, at most 255 UTF-8 bytes (keeping the
// extension), and never empty. Files are stored by id, never by this name.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// Overrides and isolates that make "exe.txt" display as "txt.exe" (U+202A-202E, U+2066-2069), and marks.
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const MAX_BYTES = 255;

// Names Windows reserves for devices, with any extension: saving "CON.txt" there opens the console.
const RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\.|$)/i;

export function safeFilename(name: string | undefined | null, fallback = 'attachment'): string {
  let clean = (name ?? '').normalize('NFC').replace(CONTROL, '').replace(BIDI, '');
  clean = clean.split(/[/\\]/).pop() ?? '';
  clean = clean.replace(/^[\s.]+|[\s.]+$/g, '');
  if (!clean) return fallback;
  if (RESERVED.test(clean)) clean = `_${clean}`;
  if (Buffer.byteLength(clean) <= MAX_BYTES) return clean;
  const dot = clean.lastIndexOf('.');
  const ext = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : '';
  let stem = clean.slice(0, clean.length - ext.length);
  while (Buffer.byteLength(stem + ext) > MAX_BYTES) stem = [...stem].slice(0, -1).join('');
  return stem + ext;
}

/**
 * The file name an upload's X-Filename header gives: RFC 5987 (`UTF-8''na%C3%AFve.txt`), percent-encoded
 * UTF-8 (`na%C3%AFve.txt`), or plain ASCII, then made safe as above. A header is Latin-1 on the wire, so raw
 * UTF-8 arrives as mojibake: it is read back as UTF-8 when it is valid UTF-8.
 */
export function filenameFromHeader(value: string | undefined, fallback = 'attachment'): string {
  if (!value) return fallback;
  const ext = /^([A-Za-z0-9!#$&+^`{}~-]+)'[A-Za-z0-9-]*'(.*)$/s.exec(value);
  let name = ext ? ext[2] : value;
  const utf8 = ext ? ext[1].toLowerCase() === 'utf-8' : true;
  if (/%[0-9A-Fa-f]{2}/.test(name)) {
    try {
      name = utf8 ? decodeURIComponent(name) : name.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    } catch {
      // Not UTF-8 once decoded: keep the text as it came.
    }
  } else if (/[\u0080-\u00ff]/.test(name)) {
    const bytes = Buffer.from(name, 'latin1');
    const text = bytes.toString('utf8');
    if (Buffer.from(text, 'utf8').equals(bytes)) name = text;
  }
  return safeFilename(name, fallback);
}
