// Bounds on a message's top-level header section, checked in one pass over its raw bytes before any parser
// or authenticator sees it (DESIGN.md section 3, catalogue RES-06b). It says what is too big and nothing
// more: no SMTP here, the caller turns the verdict into a reply. It must stay cheap: it runs on the event loop.

/** The whole section; mailsplit refuses a bigger one anyway (catalogue F8: MAX_HEAD_SIZE, 1 MiB). */
export const MAX_HEADER_BYTES = 1024 * 1024;
/** One field with its continuation lines; Postfix's whole header_size_limit is 100 KiB. */
export const MAX_FIELD_BYTES = 64 * 1024;
/**
 * Continuation lines of one field. mailauth 4.13.3's parseHeaders (lib/tools.js) joins a folded field by
 * `concat`ing each row into the one before, quadratic in this number: 20,000 take 0.4-6 s, 50,000 take 5 s
 * and more. A real field (a long References, a DKIM-Signature) has a few dozen.
 */
export const MAX_CONTINUATION_LINES = 1000;
/**
 * Lines of the whole section. The same parseHeaders `splice`s its row array once per continuation line, and
 * each splice moves every field after it: quadratic in the section's lines even when no field has more than
 * 1,000 continuation lines. Measured (fields of 999 continuation lines followed by as many one-line fields):
 * 10,000 lines 22 ms, 20,000 lines 81 ms, 50,000 lines 0.46 s, 100,000 lines 1.7 s; 1 MiB of 4-byte lines
 * (260,000) would take about 12 s. Real sections are a few hundred lines (a long Received chain, ARC sets,
 * list headers), so 10,000 leaves a wide margin and keeps the worst case to tens of milliseconds.
 */
export const MAX_HEADER_LINES = 10_000;

export type HeaderLimit = 'header-bytes' | 'header-lines' | 'field-bytes' | 'continuation-lines';

export interface HeaderVerdict {
  limit: HeaderLimit;
  /** The bound that was passed. */
  max: number;
  /** The field that passed it (for field-bytes and continuation-lines): its name, printable ASCII only. */
  field?: string;
  /** What was too big, for the reply: "the X-Big header field has more than 1000 continuation lines". */
  text: string;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The first bound the header section of `raw` passes, or null. The section runs up to the first empty line
 * ("\r\n" or "\n" alone); a message without one is all header. Bytes counted include line breaks; a line is
 * a continuation when it starts with a byte mailauth reads as white space (/^\s/ over latin1: tab, VT, FF,
 * CR, space, NBSP), so a field cannot escape the count by folding with an unusual blank.
 */
export function headerOverLimit(raw: Uint8Array): HeaderVerdict | null {
  // A section that does not end within MAX_HEADER_BYTES is refused whatever follows, so nothing past that
  // (and the two bytes of a blank line exactly there) is ever read: a 25 MB message without a line break
  // costs no more than a 1 MiB one.
  const bytes = raw.length > MAX_HEADER_BYTES + 2 ? raw.subarray(0, MAX_HEADER_BYTES + 2) : raw;
  const end = bytes.length;
  let pos = 0;
  let lines = 0;
  let fieldStart = 0;
  let continuations = 0;
  while (pos < end) {
    const first = bytes[pos];
    if (first === LF || (first === CR && bytes[pos + 1] === LF)) return null;
    const lf = bytes.indexOf(LF, pos);
    const next = lf < 0 ? end : lf + 1;
    lines++;
    if (lines > 1 && isFoldingByte(first)) {
      continuations++;
    } else {
      fieldStart = pos;
      continuations = 0;
    }
    if (next > MAX_HEADER_BYTES) return { limit: 'header-bytes', max: MAX_HEADER_BYTES, text: `the header section is over ${MAX_HEADER_BYTES} bytes` };
    if (lines > MAX_HEADER_LINES) return { limit: 'header-lines', max: MAX_HEADER_LINES, text: `the header section has more than ${MAX_HEADER_LINES} lines` };
    if (next - fieldStart > MAX_FIELD_BYTES) {
      const field = fieldName(bytes, fieldStart);
      return { limit: 'field-bytes', max: MAX_FIELD_BYTES, field, text: `the ${field} header field is over ${MAX_FIELD_BYTES} bytes` };
    }
    if (continuations > MAX_CONTINUATION_LINES) {
      const field = fieldName(bytes, fieldStart);
      return { limit: 'continuation-lines', max: MAX_CONTINUATION_LINES, field, text: `the ${field} header field has more than ${MAX_CONTINUATION_LINES} continuation lines` };
    }
    pos = next;
  }
  return null;
}

function isFoldingByte(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0b || b === 0x0c || b === CR || b === 0xa0;
}

/** The name before the colon, as far as it is printable ASCII (it goes into an SMTP reply), at most 64 characters. */
function fieldName(bytes: Uint8Array, start: number): string {
  let name = '';
  for (let i = start; i < bytes.length && name.length < 64; i++) {
    const b = bytes[i];
    if (b === 0x3a || b < 0x21 || b > 0x7e) break;
    name += String.fromCharCode(b);
  }
  return name || '(unnamed)';
}
