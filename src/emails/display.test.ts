// GET /emails/:id/html, the reading pane's page, over the real app with mail received over SMTP: its CSP lets
// nothing run (same origin for the dashboard's keys, no scripts), and mail that sets no colours gets the dark
// style (after its doctype and in its head), while mail that sets colours is served as it came.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { setsOwnColours } from './display.ts';

let s: InboundScene;
test.before(async () => {
  s = await startInboundScene();
});
test.after(async () => {
  await s?.stop();
});

let n = 0;
async function shown(type: string, body: string): Promise<{ csp: string; html: string }> {
  const raw = `From: Bob <bob@sender.example>\nTo: ${s.inbox.address}\nSubject: Shown ${++n}\nMessage-ID: <display-${n}@sender.example>\nMIME-Version: 1.0\nContent-Type: ${type}; charset=utf-8\n\n${body}\n`;
  const reply = await s.deliver(raw, {});
  assert.is(reply.code, 250, reply.text);
  const id = /queued as (em_\w+)/.exec(reply.text)![1];
  const res = await fetch(`${s.t.api}/emails/${id}/html`, { headers: { authorization: `Bearer ${s.key}` } });
  assert.is(res.status, 200);
  return { csp: res.headers.get('content-security-policy') ?? '', html: await res.text() };
}
const DARK = '@media (prefers-color-scheme: dark)';

test('the CSP sandboxes the page: same origin for the dashboard, and nothing may run', async () => {
  const { csp } = await shown('text/html', '<p>hi</p>');
  const directives = csp.split(/;\s*/);
  assert.ok(directives.includes('sandbox allow-same-origin'), csp);
  assert.ok(directives.includes("default-src 'none'"), 'no script source at all');
  assert.not.match(csp, /allow-scripts|allow-forms|allow-popups|allow-top-navigation|script-src/);
});

test('mail without colours gets the dark style, after its doctype, in its head', async () => {
  const { html } = await shown('text/html', '<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>Plain</p></body></html>');
  assert.ok(html.startsWith('<!DOCTYPE html>'), 'the doctype stays first (no quirks mode)');
  assert.ok(html.indexOf(DARK) > html.indexOf('<head>') && html.indexOf(DARK) < html.indexOf('<title>'), html);
  const bare = await shown('text/html', '<p>No html element at all</p>');
  assert.ok(bare.html.startsWith('<style>') && bare.html.includes(DARK), bare.html);
  const text = await shown('text/plain', 'Just words & <things>.');
  assert.ok(text.html.includes(DARK) && text.html.includes('Just words &amp; &lt;things&gt;.'), text.html);
});

test('mail that sets a colour or a background is served as it came', async () => {
  for (const body of ['<body bgcolor="#fff"><p>a</p></body>', '<p style="color: #333">a</p>', '<style>td { background-color: white }</style><table><tr><td>a</td></tr></table>', '<font color=red>a</font>']) {
    const { html } = await shown('text/html', body);
    assert.not.ok(html.includes(DARK), body);
  }
});

test('the colour check: properties and old attributes count, other words do not', () => {
  for (const yes of ['<div style="background:#000">', '<td bgcolor=white>', '<body text="#222" link="blue">', 'p{color:red}', '<table background="x.png">']) assert.ok(setsOwnColours(yes), yes);
  for (const no of ['<p style="border-color:red;font-weight:bold">', '<p>Colours are nice</p>', '<a href="/?colors=1">x</a>', '<style>p{margin:0}</style>']) assert.not.ok(setsOwnColours(no), no);
});

test.run();
