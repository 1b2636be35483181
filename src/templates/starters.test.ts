// The starter contents: each call hands out its own object, placeholders and declared variables match both
// ways, sample data fits each variable's type, and the HTML makes no external requests and carries the
// responsive, Outlook-safe shell (preheader, presentation tables, a @media rule) with a plain-text twin.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STARTER_NAMES, UNSUBSCRIBE_KEY, type TemplateContent } from './content.ts';
import { starterContent } from './starters.ts';

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const used = (c: TemplateContent) =>
  new Set([c.subjectTemplate, c.htmlTemplate, c.textTemplate].flatMap((part) => [...part.matchAll(PLACEHOLDER)].map((m) => m[1]!)));

for (const starter of STARTER_NAMES) {
  test(`${starter}: a fresh object each call, named and transactional`, () => {
    const a = starterContent(starter, 'first');
    const b = starterContent(starter, 'first');
    assert.is.not(a, b);
    assert.is.not(a.variables, b.variables);
    assert.is.not(a.sampleData, b.sampleData);
    assert.equal(a, b);
    a.variables.push({ key: 'extra', type: 'string', required: false });
    a.sampleData.extra = 'x';
    assert.is(b.variables.some((v) => v.key === 'extra'), false);
    assert.is('extra' in b.sampleData, false);
    assert.is(starterContent(starter, 'second').name, 'second');
    assert.is(a.messageClass, 'transactional');
  });

  test(`${starter}: placeholders and declared variables match both ways`, () => {
    const c = starterContent(starter, 't');
    const declared = new Set(c.variables.map((v) => v.key));
    assert.is(declared.size, c.variables.length, 'variable keys are unique');
    for (const key of used(c)) assert.ok(declared.has(key), `{{${key}}} is not declared`);
    for (const key of declared) assert.ok(used(c).has(key), `${key} is declared but never used`);
    assert.not.ok(declared.has(UNSUBSCRIBE_KEY));
    for (const v of c.variables) assert.match(v.key, /^[a-z][a-z0-9_]*$/);
  });

  test(`${starter}: sample data fits every variable`, () => {
    const c = starterContent(starter, 't');
    assert.is(Object.getPrototypeOf(c.sampleData), null);
    for (const v of c.variables) {
      assert.ok(Object.hasOwn(c.sampleData, v.key), `no sample for ${v.key}`);
      const value = c.sampleData[v.key];
      if (v.type === 'number') assert.is(typeof value, 'number', v.key);
      else if (v.type === 'boolean') assert.is(typeof value, 'boolean', v.key);
      else {
        assert.type(value, 'string', v.key);
        const s = value as string;
        assert.ok(s.length > 0, v.key);
        if (v.type === 'url') assert.ok(s.startsWith('https://'), v.key);
        if (v.type === 'email') assert.ok(s.includes('@'), v.key);
        if (v.type === 'date') assert.match(s, /^\d{4}-\d{2}-\d{2}/, v.key);
      }
    }
  });

  test(`${starter}: HTML makes no external requests`, () => {
    const html = starterContent(starter, 't').htmlTemplate.toLowerCase();
    for (const banned of ['<script', '<form', 'src="http', 'url(http']) assert.not.ok(html.includes(banned), banned);
  });

  if (starter === 'blank') {
    test('blank: empty parts and no variables', () => {
      const c = starterContent('blank', 't');
      assert.equal([c.subjectTemplate, c.htmlTemplate, c.textTemplate], ['', '', '']);
      assert.equal(c.variables, []);
      assert.equal(Object.keys(c.sampleData), []);
    });
  } else {
    test(`${starter}: responsive, Outlook-safe shell with a text part`, () => {
      const c = starterContent(starter, 't');
      const html = c.htmlTemplate;
      assert.match(html, /^<!doctype html>/i);
      assert.match(html, /<body[^>]*>\s*<div style="display:none;[^"]*mso-hide:all;[^"]*">[^<]*\{\{/);
      // Hidden without what SpamAssassin flags (FONT_INVIS_MSGID, HTML_FONT_LOW_CONTRAST): see spam-score.test.ts.
      const preheader = /<div style="display:none;([^"]*)">/.exec(html)![1];
      assert.not.match(preheader, /font-size|(?:^|[;\s])color\s*:/, 'no tiny font, no colour of the background');
      assert.not.match(html, /font-size\s*:\s*[01](?:\.\d+)?px/);
      assert.match(html, /<table role="presentation"/);
      assert.not.match(html, /<table(?![^>]*role="presentation")[^>]*>/, 'every table is presentational');
      assert.match(html, /@media \(max-width: 620px\)/);
      assert.match(html, /<meta name="viewport"/);
      assert.match(html, /<title>[^<]+<\/title>/);
      assert.ok(c.subjectTemplate.match(PLACEHOLDER), 'subject has a placeholder');
      assert.ok(c.textTemplate.trim().length > 0);
      assert.not.match(c.textTemplate, /<[a-z]/i, 'text part has no markup');
      for (const v of c.variables.filter((v) => v.type === 'url')) {
        assert.ok(c.textTemplate.includes(`{{${v.key}}}`), `text part writes out ${v.key}`);
      }
    });
  }
}

test.run();
