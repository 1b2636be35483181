// SMTP smuggling (CVE-2023-51764/65/66, catalogue F2/PROTO-01): smtp-server ends DATA only at <CRLF>.<CRLF>,
// but keeps `.` lines bounded by a bare CR or LF in the message. A lenient server further along could read
// one of those as the end of the data and the rest as a second, forged transaction, so such a message is
// refused whole. A legitimate `.` line reaches us as <CRLF>.<CRLF> (the client stuffed it), which is fine.

// A line of just "." where at least one side is a bare CR or bare LF, or the data starts with ".<bare>".
const LOOK_ALIKE = /(?:^|(?<!\r)\n|\r(?!\n))\.(?:\r\n|\r|\n)|\r\n\.(?:\r(?!\n)|\n)|^\.(?:\r(?!\n)|\n)/;

/** True if the DATA content (as smtp-server hands it over, dots unstuffed) holds an end-of-data look-alike. */
export function hasSmugglingLookAlike(data: Buffer): boolean {
  return LOOK_ALIKE.test(data.toString('latin1'));
}
