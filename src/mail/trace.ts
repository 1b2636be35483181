// Trace header counting for loop detection (RFC 5321 6.3: a message with too many Received fields is
// looping and must be refused; catalogue: hop limit 50-100). Counts field starts in the header block only,
// so folded lines and a quoted "Received:" in the body do not count.

/** Received fields in the header block of a raw message (up to the first empty line). */
export function countReceived(raw: Buffer): number {
  const head = raw.subarray(0, headerEnd(raw)).toString('latin1');
  return (head.match(/(?:^|\n)Received[ \t]*:/gi) ?? []).length;
}

function headerEnd(raw: Buffer): number {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  const ends = [crlf, lf].filter((i) => i >= 0);
  return ends.length ? Math.min(...ends) : raw.length;
}
