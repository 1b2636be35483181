// The bound on a render's findings (catalogue RES-16): a template built to produce as many as it can returns
// at most 100, errors first, each message clipped, with the count of the rest; the rendered parts are exactly
// what they were without the bound. And where a render runs: which content is cheap enough for the event loop.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { content, data, SEND } from '../testkit/template-content.ts';
import { findingList, MAX_FINDING_MESSAGE, MAX_FINDINGS } from './findings.ts';
import { render } from './render.ts';
import { INLINE_MAX_WORK, renderWork } from './render-pool.ts';
import { starterContent } from './starters.ts';
import { STARTER_NAMES } from './content.ts';

/** `n` distinct placeholders made by `make`, joined. */
const many = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i)).join(' ');

test('thousands of distinct bad placeholders: 100 findings, errors kept first, the rest counted', () => {
  const html = many(5000, (i) => `{{bad-${i}}}`);
  const text = many(5000, (i) => `{{ghost${i}}}`);
  const c = content({ htmlTemplate: html, textTemplate: text, variables: [{ key: 'name', type: 'string', required: true }, { key: 'n', type: 'number', required: false }] });
  const r = render(c, data({ n: 'seven' }), SEND);
  assert.is(r.findings.length, MAX_FINDINGS);
  // 5,000 + 5,000 warnings, two errors (name missing, n not a number), two notes (neither variable is used).
  assert.is(r.findings.length + r.findingsOmitted, 10_000 + 2 + 2);
  assert.equal(r.findings.filter((f) => f.severity === 'error').map((f) => f.code), ['missing_variable', 'invalid_type'], 'errors are never the ones left out');
  assert.equal(r.findings.slice(0, 2).map((f) => f.variable), ['name', 'n'], 'in the order they were found');
  assert.is(r.findings[2].message, '{{bad-0}} in the HTML is not a placeholder (write {{variable_key}}) and is left as written');
  assert.not.ok(r.findings.some((f) => f.severity === 'info'), 'the notes are what gives way to the warnings');
  assert.is(r.html, html, 'the parts render exactly as without the bound');
  assert.is(r.text, many(5000, () => ''));
});

test('a render with few findings returns them all and omits none', () => {
  const r = render(content({ htmlTemplate: '{{a-b}} {{x}}', variables: [{ key: 'x', type: 'string', required: true }] }), data({}), SEND);
  assert.equal(r.findings.map((f) => f.code), ['missing_variable', 'invalid_placeholder', 'no_text_part']);
  assert.is(r.findingsOmitted, 0);
});

test('the list keeps errors over warnings over notes, and clips a long message', () => {
  const list = findingList(3);
  list.note('info', () => ({ code: 'i', message: 'note' }));
  list.note('warning', () => ({ code: 'w1', message: 'w'.repeat(1000) }));
  list.note('warning', () => ({ code: 'w2', message: 'second' }));
  let built = 0;
  for (let i = 0; i < 1000; i++) list.note('warning', () => ({ code: 'w', message: String(++built) }));
  list.note('error', () => ({ code: 'e', message: 'error' }));
  const { findings, omitted } = list.done();
  assert.equal(findings.map((f) => f.code), ['w1', 'w2', 'e'], 'in the order noted');
  assert.is(omitted, 1003 - 3 + 1);
  assert.is(findings[0].message.length, MAX_FINDING_MESSAGE);
  assert.ok(findings[0].message.endsWith('...'));
  assert.is(built, 1, 'a finding past the bound is counted, never built');
});

test('where a render runs: the starters and a typical send on the event loop; a long value repeated or a large template on a thread', () => {
  for (const name of STARTER_NAMES) {
    const c = starterContent(name, 'Starter');
    assert.ok(renderWork(c, data({}), { useSampleData: true, keepUnsubscribe: false }) <= INLINE_MAX_WORK, name);
  }
  const digest = content({ htmlTemplate: `<p>Hi {{name}}</p>${'<p>news</p>'.repeat(2000)}`, textTemplate: 'Hi {{name}}', variables: [{ key: 'name', type: 'string', required: true }] });
  assert.ok(renderWork(digest, data({ name: 'Ada Lovelace' }), SEND) <= INLINE_MAX_WORK, 'a 24 KB template with a short value');
  const repeated = content({ htmlTemplate: '{{v}}'.repeat(100), variables: [{ key: 'v', type: 'string', required: true }] });
  assert.ok(renderWork(repeated, data({ v: 'x'.repeat(1000) }), SEND) > INLINE_MAX_WORK, '100 uses of a 1,000-character value (600 KB escaped at most)');
});

test.run();
