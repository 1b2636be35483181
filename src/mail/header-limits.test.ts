// The header bounds on raw bytes: where the section ends (CRLF, bare LF, no blank line at all), each bound
// exactly at its limit and one over, folding with unusual blanks, and what the verdict names.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { headerOverLimit, MAX_CONTINUATION_LINES, MAX_FIELD_BYTES, MAX_HEADER_BYTES, MAX_HEADER_LINES } from './header-limits.ts';

const bytes = (s: string) => Buffer.from(s, 'latin1');
const BASE = 'From: a@example.com\r\nTo: b@example.net\r\nSubject: hi\r\n';

/** A field of exactly `size` bytes, line breaks included, as one line (`eol` is its line break). */
const fieldOf = (name: string, size: number, eol = '\r\n') => `${name}: ${'x'.repeat(size - name.length - 2 - eol.length)}${eol}`;
/** A field with `k` continuation lines of " b". */
const folded = (name: string, k: number, eol = '\r\n') => `${name}: a${eol}` + ` b${eol}`.repeat(k);

test('an ordinary message, with CRLF or bare LF, is within every bound', () => {
  assert.is(headerOverLimit(bytes(`${BASE}\r\nHello\r\n`)), null);
  assert.is(headerOverLimit(bytes(`${BASE}\r\nHello\r\n`.replace(/\r\n/g, '\n'))), null);
  assert.is(headerOverLimit(bytes('')), null);
  assert.is(headerOverLimit(bytes('\r\n')), null);
});

test('the body is not header: whatever follows the first empty line is never counted', () => {
  const body = ' folded-looking body line\r\n'.repeat(MAX_CONTINUATION_LINES * 3) + 'y'.repeat(MAX_HEADER_BYTES + 10);
  assert.is(headerOverLimit(bytes(`${BASE}\r\n${body}`)), null, 'CRLF blank line');
  assert.is(headerOverLimit(bytes(`${BASE.replace(/\r\n/g, '\n')}\n${body}`)), null, 'bare LF blank line');
  assert.is(headerOverLimit(bytes(`X-A: a\r\n\n${body}`)), null, 'a bare LF right after a CRLF line ends the section too');
});

test('continuation lines: exactly 1,000 pass, 1,001 are refused, with CRLF and bare LF', () => {
  for (const eol of ['\r\n', '\n']) {
    assert.is(headerOverLimit(bytes(`${BASE}${folded('References', MAX_CONTINUATION_LINES, eol)}${eol}body`)), null, JSON.stringify(eol));
    const over = headerOverLimit(bytes(`${BASE}${folded('References', MAX_CONTINUATION_LINES + 1, eol)}${eol}body`));
    assert.equal(over, {
      limit: 'continuation-lines',
      max: MAX_CONTINUATION_LINES,
      field: 'References',
      text: 'the References header field has more than 1000 continuation lines',
    });
  }
});

test('continuation lines are counted per field: many fields of 1,000 each pass', () => {
  const raw = Array.from({ length: 5 }, (_, i) => folded(`X-F${i}`, MAX_CONTINUATION_LINES)).join('');
  assert.is(headerOverLimit(bytes(`${raw}\r\nbody`)), null);
});

test('a fold with a tab, VT, FF, NBSP or a bare CR counts as a continuation line (mailauth folds on /^\\s/)', () => {
  for (const blank of ['\t', '\x0b', '\x0c', '\xa0', '\r']) {
    const raw = `X-Odd: a\r\n${`${blank}b\r\n`.repeat(MAX_CONTINUATION_LINES + 1)}\r\nbody`;
    assert.is(headerOverLimit(bytes(raw))?.limit, 'continuation-lines', JSON.stringify(blank));
  }
});

test('the 100,000-line header bomb (catalogue RES-06b) is refused at its 1,001st continuation line', () => {
  const raw = bytes(`${BASE}X-Bomb: a\r\n${' b\r\n'.repeat(100_000)}\r\nbody\r\n`);
  assert.is(headerOverLimit(raw)?.limit, 'continuation-lines');
  // No blank line at all: the same.
  assert.is(headerOverLimit(bytes(`X-Bomb: a\r\n${' b\r\n'.repeat(100_000)}`))?.limit, 'continuation-lines');
});

test('one field: exactly 64 KiB passes, one byte more is refused, folded or not', () => {
  for (const eol of ['\r\n', '\n']) {
    assert.is(headerOverLimit(bytes(`${BASE}${fieldOf('X-Big', MAX_FIELD_BYTES, eol)}${eol}body`)), null);
    const over = headerOverLimit(bytes(`${BASE}${fieldOf('X-Big', MAX_FIELD_BYTES + 1, eol)}${eol}body`));
    assert.equal(over, { limit: 'field-bytes', max: MAX_FIELD_BYTES, field: 'X-Big', text: 'the X-Big header field is over 65536 bytes' });
  }
  // 100 lines of 700 bytes: 70,000 bytes in one folded field.
  const foldedBig = `X-Folded: a\r\n${` ${'z'.repeat(697)}\r\n`.repeat(100)}`;
  assert.is(headerOverLimit(bytes(`${foldedBig}\r\nbody`))?.limit, 'field-bytes');
  // The same lines as separate fields are fine.
  assert.is(headerOverLimit(bytes(`${`X-Line: ${'z'.repeat(690)}\r\n`.repeat(100)}\r\nbody`)), null);
});

test('the header section: exactly 1 MiB passes, one byte more is refused (552 material), also without a blank line', () => {
  const field = fieldOf('X-Fill', 60_000);
  const count = Math.floor(MAX_HEADER_BYTES / field.length);
  const fill = field.repeat(count);
  const exact = fill + fieldOf('X-Last', MAX_HEADER_BYTES - fill.length);
  assert.is(exact.length, MAX_HEADER_BYTES);
  assert.is(headerOverLimit(bytes(`${exact}\r\nbody`)), null);
  assert.is(headerOverLimit(bytes(exact)), null, 'no blank line: the whole message is the header');
  const over = fill + fieldOf('X-Last', MAX_HEADER_BYTES + 1 - fill.length);
  assert.equal(headerOverLimit(bytes(`${over}\r\nbody`)), { limit: 'header-bytes', max: MAX_HEADER_BYTES, text: 'the header section is over 1048576 bytes' });
  assert.is(headerOverLimit(bytes(over))?.limit, 'header-bytes');
});

test('a message of one long line without any line break is refused without reading past the limit', () => {
  const huge = Buffer.alloc(25 * 1024 * 1024, 0x61);
  const started = process.hrtime.bigint();
  assert.is(headerOverLimit(huge)?.limit, 'header-bytes');
  assert.ok(Number(process.hrtime.bigint() - started) < 1e9, 'one bounded scan');
});

test('the section: exactly 10,000 lines pass, 10,001 are refused, with CRLF and bare LF', () => {
  for (const eol of ['\r\n', '\n']) {
    const lines = (k: number) => `X-L: 1${eol}`.repeat(k);
    assert.is(headerOverLimit(bytes(`${lines(MAX_HEADER_LINES)}${eol}body`)), null);
    assert.equal(headerOverLimit(bytes(`${lines(MAX_HEADER_LINES + 1)}${eol}body`)), {
      limit: 'header-lines',
      max: MAX_HEADER_LINES,
      text: 'the header section has more than 10000 lines',
    });
  }
  // Folded fields under their own bound still count towards the section's lines.
  const foldedFields = Array.from({ length: 11 }, (_, i) => folded(`X-F${i}`, 999)).join('');
  assert.is(headerOverLimit(bytes(`${foldedFields}\r\nbody`))?.limit, 'header-lines');
});

test('the field name in a verdict is printable ASCII only, so it cannot break the SMTP reply', () => {
  const raw = `X-Evil\r\x00\xff: a\r\n${' b\r\n'.repeat(MAX_CONTINUATION_LINES + 1)}`;
  assert.is(headerOverLimit(bytes(raw))?.field, 'X-Evil');
  assert.is(headerOverLimit(bytes(`: a\r\n${' b\r\n'.repeat(MAX_CONTINUATION_LINES + 1)}`))?.field, '(unnamed)');
});

test('a leading folded line belongs to no earlier field and starts one of its own', () => {
  assert.is(headerOverLimit(bytes(` odd first line\r\n${BASE}\r\nbody`)), null);
});

test.run();
