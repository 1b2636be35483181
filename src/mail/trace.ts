// Trace fields of received mail: counting Received for loop detection (RFC 5321 6.3: a message with too many
// Received fields is looping and must be refused; catalogue: hop limit 50-100), and removing
// Authentication-Results that claim to come from this box (RFC 8601 5: a receiver must remove or rename
// fields bearing its own authserv-id before adding its own, or a sender could forge our verdict).
import { headerEnd } from './headers.ts';

/** Received fields in the header block of a raw message (up to the first empty line). */
export function countReceived(raw: Buffer): number {
  const head = raw.subarray(0, headerEnd(raw)).toString('latin1');
  return (head.match(/(?:^|\n)Received[ \t]*:/gi) ?? []).length;
}

/** The raw message without the Authentication-Results fields whose authserv-id is `authservId`. */
export function withoutAuthResultsOf(raw: Buffer, authservId: string): Buffer {
  const end = headerEnd(raw);
  const head = raw.subarray(0, end).toString('latin1');
  const id = authservId.toLowerCase();
  // A field is its first line plus the folded lines after it.
  const fields = head.split(/(?<=\n)(?=[^ \t])/);
  const kept = fields.filter((field) => {
    const m = /^Authentication-Results[ \t]*:[ \t\r\n]*([^;\s]+)/i.exec(field);
    return !m || m[1].toLowerCase() !== id;
  });
  if (kept.length === fields.length) return raw;
  // The block ends before its last line break, so a removed last field leaves one line break too many.
  return Buffer.concat([Buffer.from(kept.join('').replace(/\r?\n$/, ''), 'latin1'), raw.subarray(end)]);
}
