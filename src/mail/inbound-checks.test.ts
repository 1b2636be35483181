// The pure checks the receiving pipeline applies: smuggling look-alikes, attachment names, loop counting.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hasSmugglingLookAlike } from './smuggling.ts';
import { safeFilename } from './filenames.ts';
import { countReceived } from './trace.ts';

const data = (s: string) => Buffer.from(s, 'latin1');
const smuggled = 'MAIL FROM:<evil@x>\r\nRCPT TO:<v@y>\r\nDATA\r\nSubject: smuggled\r\n\r\nbad';

test('every bare-CR/LF end-of-data look-alike is caught (mox data_test list), anywhere in the data', () => {
  for (const p of ['\n.\n', '\n.\r\n', '\r\n.\n', '\r.\r', '\r.\r\n', '\r\n.\r', '\n.\r']) {
    assert.ok(hasSmugglingLookAlike(data(`Subject: x\r\n\r\nhello${p}${smuggled}`)), JSON.stringify(p));
  }
  for (const p of ['.\n', '.\r']) assert.ok(hasSmugglingLookAlike(data(`${p}${smuggled}`)), `at the start: ${JSON.stringify(p)}`);
});

test('legitimate dots are not smuggling', () => {
  for (const body of ['Subject: x\r\n\r\nline\r\n.\r\nafter', 'a\r\n..\r\nb', 'end with a dot.\r\n', '.hidden file\r\n', 'x\r\n.. \r\n', 'x\r\n.\r\n']) {
    assert.not.ok(hasSmugglingLookAlike(data(body)), JSON.stringify(body));
  }
  assert.not.ok(hasSmugglingLookAlike(data('bare\nLF lines\nbut no dot line\n')), 'bare LF alone is not a look-alike');
});

test('the byte scan agrees with the regular expression it replaced, on every string of CR, LF, "." and "a" up to 8 long', () => {
  // The definition the scan implements, as it was written first.
  const LOOK_ALIKE = /(?:^|(?<!\r)\n|\r(?!\n))\.(?:\r\n|\r|\n)|\r\n\.(?:\r(?!\n)|\n)|^\.(?:\r(?!\n)|\n)/;
  const alphabet = ['\r', '\n', '.', 'a'];
  let strings = [''];
  for (let length = 1; length <= 8; length++) {
    strings = strings.flatMap((s) => alphabet.map((c) => s + c));
    for (const s of strings) if (hasSmugglingLookAlike(data(s)) !== LOOK_ALIKE.test(s)) assert.unreachable(JSON.stringify(s));
  }
});

test('attachment names lose paths, control and bidi characters, and are bounded', () => {
  const cases: Array<[string | undefined, string]> = [
    ['../../x.pdf', 'x.pdf'],
    ['..\\..\\windows\\system32\\x.dll', 'x.dll'],
    ['/abs/path.txt', 'path.txt'],
    ['a\u0000b.txt', 'ab.txt'],
    ['line\r\nbreak.txt', 'linebreak.txt'],
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['..', 'attachment'],
    ['', 'attachment'],
    [undefined, 'attachment'],
    ['  spaced .txt  ', 'spaced .txt'],
    ['Übersicht.pdf', 'Übersicht.pdf'],
  ];
  for (const [input, want] of cases) assert.is(safeFilename(input), want, JSON.stringify(input));
  const long = safeFilename('ä'.repeat(300) + '.pdf');
  assert.ok(Buffer.byteLength(long) <= 255);
  assert.ok(long.endsWith('.pdf'), 'the extension survives shortening');
});

test('Received fields are counted in the header block only', () => {
  const hops = (n: number) => Array.from({ length: n }, (_, i) => `Received: from hop${i}\r\n\tby x; Mon, 1 Jan 2024 00:00:00 +0000\r\n`).join('');
  assert.is(countReceived(data(`${hops(51)}Subject: loop\r\n\r\nReceived: in the body\r\n`)), 51);
  assert.is(countReceived(data(`received : lower case\r\n${hops(2)}\r\nbody`)), 3);
  assert.is(countReceived(data('Subject: none\r\n\r\nReceived: body only')), 0);
  assert.is(countReceived(data('X-Note: see\r\n Received: folded, not a field\r\n\r\n')), 0);
});

test.run();
