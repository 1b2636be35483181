// A short text/plain message built in one synchronous step, for a note the box writes into a mailbox inside a
// transaction and never sends (feedback/notices.ts): the header fields are the box's own (ASCII, checked), the
// body 7bit when it is ASCII in short lines, else base64 (RFC 2045 6.8). Pure: no clock, no database.

export interface PlainMessage {
  from: { name: string; address: string };
  to: { address: string };
  /** ASCII. */
  subject: string;
  date: number;
  /** Without angle brackets, like inReplyTo and references. */
  messageId: string;
  inReplyTo?: string | null;
  references?: string[];
  /** Further fields, ASCII (Auto-Submitted ...). */
  headers?: Record<string, string>;
  text: string;
}

// RFC 5322 2.1.1: at most 998 characters a line.
const MAX_LINE = 998;
const ASCII_FIELD = /^[\x20-\x7e]*$/;

export function plainMessage(m: PlainMessage): Buffer {
  const fields: Array<[string, string]> = [
    ['From', `"${m.from.name.replace(/["\\]/g, '')}" <${m.from.address}>`],
    ['To', `<${m.to.address}>`],
    ['Subject', m.subject],
    // RFC 5322 3.3: the date-time as the trace fields write it.
    ['Date', new Date(m.date).toUTCString().replace('GMT', '+0000')],
    ['Message-ID', `<${m.messageId}>`],
    ...(m.inReplyTo ? [['In-Reply-To', `<${m.inReplyTo}>`] as [string, string]] : []),
    // One msg-id a line: a reference list never makes a line too long (RFC 5322 3.6.4).
    ...(m.references?.length ? [['References', m.references.map((id) => `<${id}>`).join('\r\n ')] as [string, string]] : []),
    ...Object.entries(m.headers ?? {}),
    ['MIME-Version', '1.0'],
  ];
  for (const [name, value] of fields) {
    for (const line of value.split('\r\n ')) {
      if (!ASCII_FIELD.test(line) || line.length + name.length + 2 > MAX_LINE) throw new Error(`plainMessage: the ${name} field is not a short ASCII line`);
    }
  }
  const lines = m.text.replace(/\r\n?/g, '\n').split('\n');
  const plain = lines.every((l) => ASCII_FIELD.test(l.replace(/\t/g, ' ')) && l.length <= MAX_LINE);
  const body = plain
    ? lines.join('\r\n')
    : (Buffer.from(m.text, 'utf8').toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
  fields.push(['Content-Type', 'text/plain; charset=utf-8'], ['Content-Transfer-Encoding', plain ? '7bit' : 'base64']);
  const end = body.endsWith('\r\n') || body === '' ? '' : '\r\n';
  return Buffer.from(`${fields.map(([name, value]) => `${name}: ${value}`).join('\r\n')}\r\n\r\n${body}${end}`, 'utf8');
}
