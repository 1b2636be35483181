// A message's header fields as plain data: lower-case name -> unfolded values in order of appearance. Built
// from mailparser's `headerLines` (mailparser does the MIME work); classification and threading read it.

export type HeaderFields = Record<string, string[]>;

export function headerFields(lines: ReadonlyArray<{ key: string; line: string }>): HeaderFields {
  const fields: HeaderFields = Object.create(null);
  for (const { key, line } of lines) {
    const colon = line.indexOf(':');
    const value = (colon >= 0 ? line.slice(colon + 1) : '').replace(/\r?\n[ \t]+/g, ' ').trim();
    (fields[key.toLowerCase()] ??= []).push(value);
  }
  return fields;
}

/** Where the header block of a raw message ends (the empty line), or its length when it has none. */
export function headerEnd(raw: Buffer): number {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf < 0) return lf < 0 ? raw.length : lf;
  return lf < 0 ? crlf : Math.min(crlf, lf);
}
