// Catalogue RES-16 over real sockets: one workspace renders a 1 MB template built to produce as many findings as
// it can, eight times at once, while another workspace's API calls and an SMTP session must each be answered
// within a time budget; the renders come back with 100 findings and the count of the rest. A workspace's line
// of renders is bounded (429 past it) and another workspace's render takes the next turn; a send by a large
// template renders the same way; and a render past its budget answers 503 (API) or 451 (SMTP), sending nothing.
import { connect } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTransport } from 'nodemailer';
import { simpleParser } from 'mailparser';
import { freePort, request, seedWorkspace } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually, startOutboundScene } from '../testkit/outbound.ts';

/** How long each of the other workspace's calls may take while the renders run (a budget, not a measurement). */
const BUDGET_MS = 3000;

let s: InboundScene;
let heavyKey: string;
const as = (key: string) => (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key, ...opts });
let heavy: ReturnType<typeof as>;
let other: ReturnType<typeof as>;

/** Placeholders made by `make` for i = 0, 1, ... up to `chars` characters: each distinct, each its own finding. */
function built(chars: number, make: (i: number) => string): string {
  const out: string[] = [];
  for (let i = 0, n = make(0).length; n <= chars; n += make(++i).length) out.push(make(i));
  return out.join('');
}
// 1 MB of the shortest distinct bad placeholders (left as written, one warning each): 116,000 findings, 16 MB
// of them as JSON before the bound. The text part: undeclared variables, filled with nothing, one warning each.
const HUGE_HTML = built(1_000_000, (i) => `{{-${i.toString(36)}}}`);
const SOME_TEXT = built(2_000, (i) => `{{k${i.toString(36)}}}`);

/** A template of `api`'s workspace with the given parts in its draft (one PUT per part: the body limit is 1 MiB). */
async function template(api: ReturnType<typeof as>, key: string, parts: Array<Record<string, unknown>>): Promise<string> {
  const created = await api('/templates', { body: { name: key, key } });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const id = created.body.template.id as string;
  let revision = 1;
  for (const part of parts) {
    const saved = await api(`/templates/${id}/draft`, { method: 'PUT', body: { revision, ...part } });
    assert.is(saved.status, 200, JSON.stringify(saved.body).slice(0, 300));
    revision = saved.body.draft.revision;
  }
  return id;
}

/** `promise`, or a failure naming `what` once `ms` have passed without an answer. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An SMTP session to the MX listener from `localAddress`: the reply codes to the greeting, EHLO, MAIL and RCPT. */
function smtpSession(port: number, localAddress: string, rcpt: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    const commands = ['EHLO client.example', 'MAIL FROM:<someone@sender.example>', `RCPT TO:<${rcpt}>`, 'QUIT'];
    const codes: number[] = [];
    let buffer = '';
    socket.setEncoding('latin1');
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      // A reply ends with a line whose code is followed by a space (RFC 5321 4.2.1).
      for (let m = /^(\d{3}) .*\r\n/m.exec(buffer); m; m = /^(\d{3}) .*\r\n/m.exec(buffer)) {
        buffer = buffer.slice(m.index + m[0].length);
        codes.push(Number(m[1]));
        const next = commands.shift();
        if (next === undefined) {
          socket.end();
          return resolve(codes);
        }
        socket.write(`${next}\r\n`);
      }
    });
  });
}

test.before(async () => {
  // The renders' budget is not what these tests are about: on a machine shared with other work a render thread at
  // its lower priority can take seconds for its 0.2 s of CPU.
  const env = { MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_RETRY_SCHEDULE: '10m', MAILWRIGHT_RENDER_TIMEOUT: '2m' };
  s = await startInboundScene({ env });
  s.routeTo('dest.test');
  // The scene's workspace (its inbox hello@in.example, sending from in.example) is the other one here.
  other = as(s.key);
  heavyKey = (await seedWorkspace(s.t, { workspace: 'heavy', email: 'owner@heavy.test' })).key;
  heavy = as(heavyKey);
  await s.verifiedDomain('heavy.test', heavyKey);
});
test.after(() => s.stop());

test("eight renders of a 1 MB template at once: the other workspace's API and SMTP answer within budget; findings bounded", async () => {
  const id = await template(heavy, 'huge', [{ htmlTemplate: HUGE_HTML, textTemplate: SOME_TEXT }]);
  // Each path of the other workspace once before: a first send starts the signing threads, and that is not
  // what the budget is about.
  assert.is((await other('/emails', { body: { from: 'app@in.example', to: ['reader@dest.test'], subject: 'First', text: 'hello' } })).status, 200);
  assert.equal(await smtpSession(s.t.smtpPort, '127.0.0.19', s.inbox.address), [220, 250, 250, 250, 221]);
  const sentBefore = (await other('/emails?direction=out&limit=100')).body.count as number;

  let pending = 8;
  const renders = Array.from({ length: 8 }, () => heavy(`/templates/${id}/render`, { method: 'POST', body: {} }).finally(() => pending--));
  const all = Promise.all(renders);
  // Whatever happens below, the renders end within this test.
  const settled = all.catch(() => []);
  let round = 0;
  let roundsDuringRenders = 0;
  try {
    do {
      const list = await within(BUDGET_MS, 'GET /emails', other('/emails?limit=5'));
      assert.is(list.status, 200);
      const sent = await within(BUDGET_MS, 'POST /emails', other('/emails', { body: { from: 'app@in.example', to: ['reader@dest.test'], subject: `Round ${round}`, text: 'hello' } }));
      assert.is(sent.status, 200, JSON.stringify(sent.body));
      // A new client address each round: the listener limits connections per address per minute.
      const codes = await within(BUDGET_MS, 'SMTP EHLO/MAIL/RCPT', smtpSession(s.t.smtpPort, `127.0.0.${20 + round}`, s.inbox.address));
      assert.equal(codes, [220, 250, 250, 250, 221]);
      round++;
      if (pending > 0) roundsDuringRenders++;
    } while (pending > 0 && round < 60);
  } finally {
    await settled;
  }
  assert.ok(roundsDuringRenders >= 1, `the other workspace was served while the renders ran (${roundsDuringRenders} rounds)`);
  assert.is((await other('/emails?direction=out&limit=100')).body.count, sentBefore + round, 'every send of the other workspace was stored');

  for (const r of await all) {
    assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    assert.is(r.body.findings.length, 100);
    assert.ok(r.body.findingsOmitted > 100_000, `the rest are counted (${r.body.findingsOmitted})`);
    assert.ok(JSON.stringify(r.body.findings).length < 100 * 400, 'each finding bounded');
    assert.is(r.body.html, HUGE_HTML, 'bad placeholders are left as written');
    assert.is(r.body.text, '', 'undeclared variables without a value render as nothing');
    assert.is(r.body.findings[0].message, '{{-0}} in the HTML is not a placeholder (write {{variable_key}}) and is left as written');
    assert.equal(Object.keys(r.body).sort(), ['findings', 'findingsOmitted', 'html', 'subject', 'text']);
  }
});

test("past the workspace's line a render is 429 with retry-after; another workspace's render takes the next turn", async () => {
  const id = (await heavy('/templates/huge')).body.template.id as string;
  const mine = await template(other, 'mid', [{ htmlTemplate: built(200_000, (i) => `{{-${i.toString(36)}}}`), textTemplate: 'plain' }]);
  const order: string[] = [];
  const burst = Array.from({ length: 24 }, (_, i) =>
    heavy(`/templates/${id}/render`, { method: 'POST', body: {} }).then((r) => {
      if (r.status === 200) order.push(`heavy ${i}`);
      return r;
    }),
  );
  // The burst's first renders are in by now (each takes far longer than a request takes to arrive).
  await eventually(async () => (await heavy(`/templates/${id}/render`, { method: 'POST', body: {} })).status === 429, 20_000, 'the line of the heavy workspace full');
  const mid = await other(`/templates/${mine}/render`, { method: 'POST', body: {} });
  order.push('other');
  assert.is(mid.status, 200, JSON.stringify(mid.body).slice(0, 300));
  assert.equal([mid.body.findings.length, mid.body.findingsOmitted > 0], [100, true]);

  const answers = await Promise.all(burst);
  const refused = answers.filter((r) => r.status === 429);
  const served = answers.filter((r) => r.status === 200);
  assert.is(refused.length + served.length, answers.length, `only 200 or 429: ${answers.map((r) => r.status)}`);
  assert.ok(refused.length >= 1 && served.length >= 9, `${served.length} served, ${refused.length} refused`);
  for (const r of refused) {
    assert.equal([r.body.error.code, r.body.error.status, r.headers.get('retry-after')], ['too_many_renders', 429, '1']);
    assert.match(r.body.error.message, /at most 2 running and 8 waiting/);
  }
  assert.ok(order.indexOf('other') < order.length - 3, `the other workspace's render did not wait for the whole line: ${order.join(', ')}`);
});

test('a send by a large template is rendered the same way and arrives; a small one as before', async () => {
  const body = `<p>Hi {{name}}</p>${'<p>Lorem ipsum dolor sit amet.</p>'.repeat(6000)}`;
  const id = await template(heavy, 'long-news', [{ htmlTemplate: body, textTemplate: 'Hi {{name}}', subjectTemplate: 'For {{name}}', variables: [{ key: 'name', type: 'string', required: true }] }]);
  assert.is((await heavy(`/templates/${id}/publish`, { method: 'POST', body: {} })).status, 201);
  const sent = await heavy('/emails', { body: { from: 'news@heavy.test', to: ['long@dest.test'], template: { key: 'long-news', data: { name: 'Ada & co' } } } });
  assert.is(sent.status, 200, JSON.stringify(sent.body).slice(0, 300));
  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('long@dest.test')), 20_000, 'the long mail delivered');
  const parsed = await simpleParser(m.raw);
  assert.equal([parsed.subject, parsed.text?.trim()], ['For Ada & co', 'Hi Ada & co']);
  assert.ok((parsed.html as string).startsWith('<p>Hi Ada &amp; co</p>') && (parsed.html as string).length >= body.length);
  const refused = await heavy('/emails', { body: { from: 'news@heavy.test', to: ['x@dest.test'], template: { key: 'long-news' } } });
  assert.equal([refused.status, refused.body.error.errors[0].path, refused.body.error.findingsOmitted], [400, 'template.data.name', 0]);
});

test('a render past render_timeout: 503 with retry-after over the API, 451 over SMTP submission, nothing sent', async () => {
  const o = await startOutboundScene({ env: { MAILWRIGHT_RENDER_TIMEOUT: '1ms', MAILWRIGHT_SUBMISSION_PORT: String(await freePort()) } });
  try {
    await o.verifiedDomain('sender.test');
    o.routeTo('dest.test');
    const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${o.t.api}${path}`, { key: o.key, ...opts });
    const created = (await api('/templates', { body: { name: 'Big', key: 'big' } })).body.template.id as string;
    await api(`/templates/${created}/draft`, { method: 'PUT', body: { revision: 1, htmlTemplate: HUGE_HTML, textTemplate: 'Big {{name}}', variables: [{ key: 'name', type: 'string', required: false }] } });
    await api(`/templates/${created}/publish`, { method: 'POST', body: {} });

    const r = await api(`/templates/${created}/render`, { method: 'POST', body: {} });
    assert.equal([r.status, r.body.error.code, r.headers.get('retry-after')], [503, 'render_timeout', '1']);
    assert.match(r.body.error.message, /ran past its 0\.001 s budget \(render_timeout\); nothing was rendered or sent/);
    const send = await o.send({ from: 'app@sender.test', to: ['big@dest.test'], template: { key: 'big' } });
    assert.equal([send.status, send.body.error.code], [503, 'render_timeout']);

    const tx = createTransport({ host: '127.0.0.1', port: o.t.submissionPort!, secure: false, requireTLS: true, tls: { rejectUnauthorized: false }, auth: { user: 'app', pass: o.key } });
    const viaSmtp = await tx.sendMail({ from: 'app@sender.test', to: 'big@dest.test', subject: '', text: 'ignored', headers: { 'X-Mailwright-Template': 'big' } }).then(
      () => null,
      (err: { responseCode: number; response: string }) => err,
    );
    tx.close();
    assert.is(viaSmtp?.responseCode, 451, 'a temporary failure: the sender tries again later');
    assert.match(viaSmtp!.response, /4\.3\.0 Rendering the template ran past its/);
    assert.is((await api('/emails?direction=out')).body.count, 0, 'nothing was stored or queued');
    assert.ok(o.t.logs.some((line) => line.includes('template render ran past its budget')), 'the operator is told');

    // A small template is rendered on the event loop, at once, whatever the budget of the render threads.
    const small = (await api('/templates', { body: { name: 'Small', key: 'small', starter: 'welcome' } })).body.template.id as string;
    const preview = await api(`/templates/${small}/render`, { method: 'POST', body: {} });
    assert.equal([preview.status, preview.body.findingsOmitted], [200, 0]);
    assert.match(preview.body.subject, /Welcome/);
  } finally {
    await o.stop();
  }
});

test.run();
