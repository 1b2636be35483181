// How a body's bytes look inside a message on the wire, for packing's dictionaries (packing.ts): a message
// carries its bodies with CRLF line ends and, when they hold non-ASCII bytes or long lines, quoted-printable
// with soft line breaks every 76 characters. A message deflated against its bodies as stored begins a new match
// at every place the two differ, so the closer the dictionary is to the wire, the fewer bytes the message costs.
//
// Stored messages are unpacked against exactly these bytes, so neither rendition may ever change: they are ours,
// not a library's, for a library's encoder may change its output in any release. They only need to resemble
// what senders write; the quoted-printable one breaks lines where nodemailer (mail/compose.ts) does, which is
// where most of the box's own mail breaks them. Text, not bytes: regular expressions run natively.

/**
 * The bytes, as Latin-1 text, with a CR put before each LF that has none. Bodies as mailparser gives them hold
 * no CR at all: every LF then takes one, found natively by a plain search, 2-3 µs for 9 KB against 9-26 for
 * the look-behind, which only the rest need (it runs for every message packed against its bodies).
 */
export function wireLines(b: Uint8Array | null): string {
  if (!b?.length) return '';
  const text = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
  return text.includes('\r') ? text.replace(/(?<!\r)\n/g, '\r\n') : text.replaceAll('\n', '\r\n');
}

const LINE = 76;
/** How far back from a line's end a soft break may move to fall after a space or punctuation. */
const MARGIN = Math.floor(LINE / 3);
/** Where a soft break may follow: space, tab, '.', ',', '!', '?'. */
const BREAKS = new Set([0x20, 0x09, 0x2e, 0x2c, 0x21, 0x3f]);
const PARTIAL_ESCAPE = /=[\dA-F]?$/;
const ESCAPE_AT_END = /=([\dA-F]{2})$/;
const ONLY_ESCAPES = /^(?:=[\dA-F]{2}){1,4}$/;
/** What quoted-printable writes as =XX (RFC 2045 6.7): all but TAB, LF, CR and printable ASCII, '=', and a space or tab before a line end. */
const NEEDS_ESCAPE = /[^\t\r\n\x20-\x3c\x3e-\x7e]|[ \t](?=[\r\n]|$)/g;
const hex = (c: string) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;

/** The last space or punctuation in the last third of a 76-character line, or -1. */
function lastBreak(line: string): number {
  for (let i = line.length - 1; i >= line.length - MARGIN; i--) if (BREAKS.has(line.charCodeAt(i))) return i;
  return -1;
}

/** The piece of a line too long to end within 76 characters (from `pos` of s) that goes before a soft break. */
function piece(s: string, pos: number): string {
  let line = s.slice(pos, pos + LINE);
  const after = lastBreak(line);
  if (after >= 0) line = line.slice(0, after + 1);
  else {
    const partial = PARTIAL_ESCAPE.exec(line);
    if (partial) line = line.slice(0, line.length - partial[0].length);
    for (let m = ESCAPE_AT_END.exec(line); m && line.length > 3 && !ONLY_ESCAPES.test(line); m = ESCAPE_AT_END.exec(line)) {
      const byte = parseInt(m[1], 16);
      if (byte < 0x80) break;
      line = line.slice(0, -3);
      if (byte >= 0xc0) break;
    }
  }
  return line.length === LINE ? line.slice(0, ESCAPE_AT_END.test(line) ? -3 : -1) : line;
}

/**
 * Soft line breaks ("=" CRLF) so no line passes 76 characters, after a space or punctuation in a line's last
 * third where there is one, never inside an escape or a UTF-8 sequence. A line is broken when it and its CRLF
 * do not fit in 76 characters (the last, without a CRLF, when it does not); lines that fit are copied whole.
 */
function wrap(s: string): string {
  let out = '';
  for (let start = 0; start < s.length; ) {
    const crlf = s.indexOf('\r\n', start);
    const end = crlf < 0 ? s.length : crlf;
    const fits = crlf < 0 ? LINE : LINE - 2;
    let pos = start;
    while (end - pos > fits) {
      const p = piece(s, pos);
      out += `${p}=\r\n`;
      pos += p.length;
    }
    start = crlf < 0 ? s.length : crlf + 2;
    out += s.slice(pos, start);
  }
  return out;
}

/** A body's wireLines as quoted-printable, as Latin-1 text. */
export const quotedPrintable = (lines: string): string => wrap(lines.replace(NEEDS_ESCAPE, hex));
