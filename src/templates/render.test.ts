// The renderer as a table: what each placeholder becomes in each part, every variable type, the findings, and
// hostile values and names that must stay plain data.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Variable } from './content.ts';
import { content, data, SEND } from '../testkit/template-content.ts';
import { MAX_RENDERED_PART, render, typeProblem, type RenderOptions } from './render.ts';

const PREVIEW: RenderOptions = { useSampleData: true, keepUnsubscribe: false };
const v = (key: string, type: Variable['type'] = 'string', required = true): Variable => ({ key, type, required });
const codes = (r: ReturnType<typeof render>) => r.findings.map((f) => `${f.severity}:${f.code}${f.variable ? `:${f.variable}` : ''}`).sort();

test('a value is escaped for HTML, kept as-is in text, and made one line in the subject', () => {
  const c = content({ subjectTemplate: 'Hi {{name}}', htmlTemplate: '<p>{{name}}</p>', textTemplate: 'Hello {{name}}', variables: [v('name')] });
  const r = render(c, data({ name: `<script>alert("x")</script> & 'co'\r\nBcc: evil@example.com` }), SEND);
  assert.is(r.html, '<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;\r\nBcc: evil@example.com</p>');
  assert.is(r.text, `Hello <script>alert("x")</script> & 'co'\r\nBcc: evil@example.com`);
  assert.is(r.subject, `Hi <script>alert("x")</script> & 'co' Bcc: evil@example.com`);
  assert.not.match(r.subject, /[\r\n]/);
  assert.equal(codes(r), []);
});

test('spaces inside the braces are allowed; anything else in braces is left as written, with a warning', () => {
  const c = content({ textTemplate: '{{name}}|{{ name }}|{{  name\t}}|{{na me}}|{{#each x}}|{{{name}}}|{name}', variables: [v('name')] });
  const r = render(c, data({ name: 'Ada' }), SEND);
  assert.is(r.text, 'Ada|Ada|Ada|{{na me}}|{{#each x}}|{Ada}|{name}');
  assert.equal(codes(r), ['warning:invalid_placeholder', 'warning:invalid_placeholder']);
});

test('every type: accepted values render, wrong ones are errors naming the variable', () => {
  const rows: Array<[Variable['type'], unknown, string | null]> = [
    ['string', 'x', 'x'],
    ['string', 5, null],
    ['number', 42.5, '42.5'],
    ['number', '42', null],
    ['number', Number.NaN, null],
    ['boolean', false, 'false'],
    ['boolean', 'true', null],
    ['date', '2026-11-25', '2026-11-25'],
    ['date', '2026-11-25T09:30:00Z', '2026-11-25T09:30:00Z'],
    ['date', '25/11/2026', null],
    ['date', '2026-13-45', null],
    ['url', 'https://example.com/a?b=1&c=2', 'https://example.com/a?b=1&amp;c=2'],
    ['url', 'javascript:alert(1)', null],
    ['url', '/relative', null],
    ['email', 'ada@example.com', 'ada@example.com'],
    ['email', 'not an address', null],
    ['string', { a: 1 }, null],
    ['string', ['a'], null],
  ];
  for (const [type, value, out] of rows) {
    const r = render(content({ htmlTemplate: '[{{x}}]', textTemplate: 't', variables: [v('x', type)] }), data({ x: value }), SEND);
    const label = `${type} ${JSON.stringify(value)}`;
    if (out === null) {
      assert.equal(codes(r), ['error:invalid_type:x'], label);
      assert.is(r.html, '[]', `${label}: a wrong value is never rendered`);
    } else {
      assert.equal(codes(r), [], label);
      assert.is(r.html, `[${out}]`, label);
    }
    assert.is(typeProblem(type, value) === null, out !== null, label);
  }
});

test('missing values: required is an error, optional is empty, and sample data fills in only for previews', () => {
  const c = content({ textTemplate: '{{a}}/{{b}}', variables: [v('a'), v('b', 'string', false)], sampleData: data({ a: 'sample-a', b: 'sample-b' }) });
  const sent = render(c, data({}), SEND);
  assert.is(sent.text, '/');
  assert.equal(codes(sent), ['error:missing_variable:a']);
  const previewed = render(c, data({ b: 'given' }), PREVIEW);
  assert.is(previewed.text, 'sample-a/given');
  assert.equal(codes(previewed), []);
  assert.equal(codes(render(c, data({ a: null }), SEND)), ['error:missing_variable:a'], 'null is no value');
});

test('findings: undeclared placeholders, unused variables, no text part, scripts, forms, unsubscribe on marketing', () => {
  const r = render(content({ htmlTemplate: '<p>{{ghost}} {{ghost}}</p><script src="https://x.test/a.js"></script><form></form>', variables: [v('unused', 'string', false)] }), data({ ghost: 'boo' }), SEND);
  assert.is(r.html, '<p>boo boo</p><script src="https://x.test/a.js"></script><form></form>', 'an undeclared placeholder takes a given scalar');
  assert.equal(codes(r), ['info:unused_variable:unused', 'warning:form', 'warning:no_text_part', 'warning:remote_script', 'warning:undeclared_variable:ghost']);
  assert.equal(codes(render(content({ htmlTemplate: '<a onclick="x()">a</a>', textTemplate: 't' }), data({}), SEND)), ['warning:script']);
  assert.equal(codes(render(content({}), data({}), SEND)), ['error:no_content']);

  const marketing = content({ htmlTemplate: '<a href="{{unsubscribe_url}}">Unsubscribe</a>', textTemplate: 'Unsubscribe: {{ unsubscribe_url }}', messageClass: 'marketing' });
  const kept = render(marketing, data({}), { useSampleData: false, keepUnsubscribe: true });
  assert.equal([kept.html, kept.text], ['<a href="{{unsubscribe_url}}">Unsubscribe</a>', 'Unsubscribe: {{unsubscribe_url}}'], 'left for the box to fill per recipient');
  assert.equal(codes(kept), []);
  assert.is(render(marketing, data({}), SEND).text, 'Unsubscribe: ', 'empty where the box does not manage unsubscribe');
  assert.equal(codes(render({ ...marketing, htmlTemplate: '<p>hi</p>', textTemplate: 'hi' }, data({}), SEND)), ['warning:missing_unsubscribe']);
});

test('prototype names are plain keys: nothing from Object.prototype is ever rendered or called', () => {
  const names = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];
  const template = names.map((n) => `[{{${n}}}]`).join('');
  const undeclared = render(content({ textTemplate: template }), data({}), SEND);
  assert.is(undeclared.text, '[][][][][]');
  const declared = render(content({ textTemplate: template, variables: names.map((n) => v(n, 'string', false)) }), JSON.parse('{"__proto__": "p", "constructor": "c", "toString": "t"}'), SEND);
  assert.is(declared.text, '[c][t][p][][]');
  assert.equal(codes(declared), []);
});

test('output is bounded: a 1 MB value renders once, a part past the bound is an error and empty', () => {
  const big = 'x'.repeat(1_000_000);
  const once = render(content({ htmlTemplate: '<p>{{v}}</p>', textTemplate: '{{v}}', variables: [v('v')] }), data({ v: big }), SEND);
  assert.is(once.text.length, 1_000_000);
  assert.equal(codes(once), []);
  const thrice = render(content({ htmlTemplate: '{{v}}{{v}}{{v}}', textTemplate: 't', variables: [v('v')] }), data({ v: big }), SEND);
  assert.is(thrice.html, '');
  assert.ok(3_000_000 > MAX_RENDERED_PART);
  assert.equal(codes(thrice), ['error:too_large']);
  const subject = render(content({ subjectTemplate: '{{v}}', textTemplate: 't', variables: [v('v')] }), data({ v: 'y'.repeat(999) }), SEND);
  assert.equal([subject.subject, codes(subject)], ['', ['error:too_large']]);
});

test.run();
