// SMTP smuggling (CVE-2023-51764/65/66, catalogue F2/PROTO-01): smtp-server ends DATA only at <CRLF>.<CRLF>,
// but keeps `.` lines bounded by a bare CR or LF in the message. A lenient server further along could read
// one of those as the end of the data and the rest as a second, forged transaction, so such a message is
// refused whole. A legitimate `.` line reaches us as <CRLF>.<CRLF> (the client stuffed it), which is fine.
// It runs on the event loop for every received message, so it looks only at the dots that start a line
// (found by Buffer.indexOf), 0.2-2 µs for a 10 KB message, instead of turning the whole message into a
// string for a regular expression (2.5-5 µs, and 10 KB of garbage).

const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;

/**
 * True if the DATA content (as smtp-server hands it over, dots unstuffed) holds an end-of-data look-alike: a
 * line of just "." where at least one side is a bare CR or bare LF, or the data starts with "." and a line end.
 */
export function hasSmugglingLookAlike(data: Buffer): boolean {
  for (let dot = data.indexOf(DOT); dot >= 0; dot = data.indexOf(DOT, dot + 1)) {
    if (!endsLine(data, dot + 1)) continue;
    if (dot === 0 || (endsLine(data, dot - 1) && lookAlike(data, dot))) return true;
  }
  return false;
}

/** A line end (CR or LF) at `i`. */
const endsLine = (data: Buffer, i: number) => data[i] === CR || data[i] === LF;

/** For a dot at `dot` between a line end before it and one after it: is either side bare? */
function lookAlike(data: Buffer, dot: number): boolean {
  // Before: a CR right before a dot is bare; an LF is bare unless a CR precedes it.
  if (data[dot - 1] === CR || data[dot - 2] !== CR) return true;
  // After a CRLF: a bare LF, or a CR not followed by LF.
  return data[dot + 1] === LF || data[dot + 2] !== LF;
}
