// GET /metrics end to end: a whole app sends over real SMTP to the test kit's sink, receives on its MX
// listener and posts a webhook, and the scrape, read by a strict parser of the Prometheus text format below,
// shows each counter move; route labels are patterns; the token and loopback rules; one registry per app.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, startTestApp, tempDir, TEST_STORE, testEnv, type TestApp } from '../testkit/app.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { ConfigError, loadConfig } from '../config/config.ts';
import { SmtpError } from '../errors.ts';
import { metricsAccess } from './routes.ts';
import { rejectionReason, statusClass } from './metrics.ts';

// --- The text format (prometheus.io/docs/instrumenting/exposition_formats, "Text format details") ---
// parse-prometheus-text-format was tried first: it drops the labels of labelled histograms (its open issue 13,
// unmerged PR 8), which is exactly what the route assertion needs, so the rules are checked here instead.

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/;
// Prometheus reads values with Go's ParseFloat, which ignores the case of NaN and Inf (prom-client writes `Nan`).
const VALUE = /^(?:[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|[+-]?inf|nan)$/i;

/** Parses an exposition, throwing at the first line that breaks a rule of the format. */
function parseExposition(text: string): Exposition {
  assert.ok(text.endsWith('\n'), 'the last line ends with a line feed');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const finished = new Set<string>();
  let family = '';
  const familyOf = (name: string) => {
    for (const suffix of ['_bucket', '_sum', '_count']) {
      const base = name.slice(0, -suffix.length);
      if (name.endsWith(suffix) && ['histogram', 'summary'].includes(types.get(base) ?? '')) return base;
    }
    return name;
  };
  const enter = (name: string, line: string) => {
    if (name === family) return;
    if (finished.has(name)) throw new Error(`the lines of ${name} are not together: ${line}`);
    if (family) finished.add(family);
    family = name;
  };
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name: ${line}`);
      enter(name, line);
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`bad type: ${line}`);
        if (types.has(name) || samples.some((s) => familyOf(s.name) === name)) throw new Error(`TYPE late or twice: ${line}`);
        types.set(name, rest);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    if (!name) throw new Error(`bad sample: ${line}`);
    let rest = line.slice(name.length);
    const labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      rest = rest.slice(1);
      while (!rest.startsWith('}')) {
        const m = LABEL.exec(rest);
        if (!m || m[1] in labels) throw new Error(`bad or repeated label: ${line}`);
        labels[m[1]] = m[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
        rest = rest.slice(m[0].length);
        if (rest.startsWith(',')) rest = rest.slice(1);
        else if (!rest.startsWith('}')) throw new Error(`bad label list: ${line}`);
      }
      rest = rest.slice(1);
    }
    const parts = rest.split(' ');
    if (parts[0] !== '' || parts.length < 2 || parts.length > 3 || !VALUE.test(parts[1]) || (parts[2] !== undefined && !/^-?\d+$/.test(parts[2]))) throw new Error(`bad value: ${line}`);
    enter(familyOf(name), line);
    samples.push({ name, labels, value: Number(parts[1].replace(/inf$/i, 'Infinity')) });
  }
  checkHistograms(types, samples);
  return { types, samples };
}

/** Per label set: `le` on every bucket, cumulative counts, a +Inf bucket equal to _count, a _sum. */
function checkHistograms(types: Map<string, string>, samples: Sample[]) {
  for (const [name, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${name}_bucket`)) {
      if (s.labels.le === undefined) throw new Error(`${name}_bucket without le`);
      const { le: _le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const counts = buckets.map((b) => b.value);
      assert.equal(counts, [...counts].sort((a, b) => a - b), `${name}${key}: buckets are cumulative`);
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      const count = samples.find((x) => x.name === `${name}_count` && JSON.stringify(x.labels) === key);
      const sum = samples.find((x) => x.name === `${name}_sum` && JSON.stringify(x.labels) === key);
      assert.ok(inf && count && sum, `${name}${key}: +Inf bucket, _count and _sum`);
      assert.is(inf!.value, count!.value, `${name}${key}: +Inf bucket equals _count`);
    }
  }
}

/** The sum of the samples of `name` whose labels include `labels`. */
const valueOf = (e: Exposition, name: string, labels: Record<string, string> = {}) =>
  e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);

// --- The scene ---

let s: InboundScene;
let receiver: Server;
let hookUrl = '';
const TOKEN = 'scrape-token-0123456789abcdef';

async function scrape(url = s.t.url, headers: Record<string, string> = {}): Promise<Exposition> {
  const res = await fetch(`${url}/metrics`, { headers });
  assert.is(res.status, 200, await res.clone().text());
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4; charset=utf-8$/);
  return parseExposition(await res.text());
}

test.before(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  s = await startInboundScene({ env: { MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'true', MAILWRIGHT_RETRY_SCHEDULE: '10m', MAILWRIGHT_MAX_MESSAGE_BYTES: '100000' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(async () => {
  receiver.close();
  await s.stop();
});

test('the exposition parses, with the default process metrics, the queue, the files and the batches', async () => {
  const e = await scrape();
  for (const name of ['nodejs_eventloop_lag_seconds', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) assert.ok(e.types.has(name), name);
  for (const state of ['queued', 'sending', 'deferred']) assert.ok(e.samples.some((x) => x.name === 'mailwright_queue_recipients' && x.labels.state === state), state);
  assert.is(e.types.get('mailwright_queue_oldest_age_seconds'), 'gauge');
  assert.is(e.types.get('mailwright_search_backlog'), 'gauge');
  assert.is(e.types.get('mailwright_writer_batch_size'), 'histogram');
  // SQLite's file, its WAL, its free pages and its group commits; PostgreSQL has none of them in the box.
  if (TEST_STORE === 'postgres') return;
  assert.ok(valueOf(e, 'mailwright_database_bytes', { file: 'db' }) > 0, 'the database file has a size');
  assert.ok(e.samples.some((x) => x.name === 'mailwright_database_bytes' && x.labels.file === 'wal'));
  const db = s.t.app.db;
  assert.is(e.types.get('mailwright_database_free_bytes'), 'gauge');
  assert.is(valueOf(e, 'mailwright_database_free_bytes', {}), (db.pragma('freelist_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number));
  // Setting up the scene (domains, inboxes) went through both group commits.
  assert.ok(valueOf(e, 'mailwright_writer_batch_size_count', { commit: 'main' }) > 0, 'main-thread commits observed');
});

test('a delivered send counts delivered/2, a refused recipient bounced/5, and a webhook delivery is counted', async () => {
  const hook = await request(`${s.t.api}/webhooks`, { key: s.key, body: { url: hookUrl, events: ['email.delivered'] } });
  assert.is(hook.status, 201, JSON.stringify(hook.body));
  s.sink.replyTo('gone@dest.test', { code: 550, message: '5.1.1 no such user' });
  const before = await scrape();
  const res = await s.send({ from: 'ada@sender.test', to: ['one@dest.test', 'gone@dest.test'], subject: 'Metrics', text: 'Counting.' });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await eventually(async () => {
    const types = (await s.events(res.body.id)).map((x) => x.type);
    return types.includes('delivered') && types.includes('bounced');
  }, 10_000, 'delivered and bounced events');
  const after = await eventually(async () => {
    const e = await scrape();
    return valueOf(e, 'mailwright_webhook_deliveries_total', { outcome: 'delivered' }) > valueOf(before, 'mailwright_webhook_deliveries_total', { outcome: 'delivered' }) && e;
  }, 10_000, 'the webhook delivery counted');
  const moved = (labels: Record<string, string>) => valueOf(after, 'mailwright_deliveries_total', labels) - valueOf(before, 'mailwright_deliveries_total', labels);
  assert.is(moved({ outcome: 'delivered', class: '2' }), 1);
  assert.is(moved({ outcome: 'bounced', class: '5' }), 1);
  assert.is(after.types.get('mailwright_deliveries_total'), 'counter');
  // Group commits are SQLite's writer thread; PostgreSQL commits each write on its own.
  if (TEST_STORE === 'sqlite') assert.ok(valueOf(after, 'mailwright_writer_batch_size_count', { commit: 'writer' }) > valueOf(before, 'mailwright_writer_batch_size_count', { commit: 'writer' }), 'the send went through the writer thread');
  assert.is(valueOf(after, 'mailwright_queue_recipients', { state: 'queued' }), 0);
  assert.is(valueOf(after, 'mailwright_queue_oldest_age_seconds'), 0);
});

test('a received message counts as accepted; an unknown recipient and an oversized message as rejected by reason', async () => {
  const before = await scrape();
  const ok = await s.deliver('From: a@sender.example\nTo: hello@in.example\nSubject: hi\nMessage-ID: <m1@sender.example>\n\nHello.\n', {});
  assert.is(ok.code, 250, ok.text);
  const unknown = await s.deliver('From: a@sender.example\nSubject: x\n\nx\n', { to: ['nobody@in.example'] });
  assert.is(unknown.code, 550);
  const big = await s.deliver(`From: a@sender.example\nTo: hello@in.example\nSubject: big\n\n${'x'.repeat(76).concat('\n').repeat(1500)}`, {});
  assert.is(big.code, 552, big.text);
  const after = await scrape();
  const moved = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels);
  assert.is(moved('mailwright_inbound_accepted_total'), 1);
  assert.is(moved('mailwright_inbound_rejected_total', { reason: 'unknown_recipient' }), 1);
  assert.is(moved('mailwright_inbound_rejected_total', { reason: 'too_big' }), 1);
  assert.is(rejectionReason(new SmtpError(554, '5.5.2 Message refused: smuggling')), 'smuggling');
  assert.is(rejectionReason(new Error('disk on fire')), 'local_error');
  assert.is(rejectionReason(new SmtpError(421, 'no enhanced code')), 'other_temporary');
});

test('API latency is labelled by the route pattern (/emails, /emails/:id), never by a raw id', async () => {
  const sent = await s.send({ from: 'ada@sender.test', to: ['one@dest.test'], subject: 'Route', text: 'x' });
  assert.is(sent.status, 200);
  assert.is((await request(`${s.t.api}/emails/${sent.body.id}`, { key: s.key })).status, 200);
  assert.is((await request(`${s.t.api}/emails/em_NOSUCHID`, { key: s.key })).status, 404);
  assert.is((await request(`${s.t.api}/emails`)).status, 401);
  const e = await scrape();
  const routes = new Set(e.samples.filter((x) => x.name === 'mailwright_http_request_duration_seconds_count').map((x) => `${x.labels.method} ${x.labels.route} ${x.labels.status_class}`));
  assert.ok(routes.has('POST /emails 2xx'), [...routes].join('\n'));
  assert.ok(routes.has('GET /emails/:id 2xx'), [...routes].join('\n'));
  assert.ok(routes.has('GET /emails/:id 4xx'), 'a 404 of a matched route keeps its pattern');
  assert.ok(routes.has('GET unmatched 4xx'), 'refused at the gate, before any route matched');
  for (const r of routes) assert.not.match(r, /em_|\/api\/v1/, `no id or prefix in a label: ${r}`);
  assert.not.ok([...routes].some((r) => r.includes('/metrics') || r.includes('/healthz')), 'only the API is timed');
});

test('access: loopback without a token; with metrics_token a Bearer token, compared whole; metrics_allow; loopback alone opens nothing behind a trusted proxy', async () => {
  const gate = (metricsToken: string | null, more: { metricsAllow?: string[]; trustedProxies?: string[] } = {}) => ({ metricsToken, metricsAllow: [], trustedProxies: [], ...more });
  assert.is(metricsAccess(gate(null), '127.0.0.1', undefined), 'ok');
  assert.is(metricsAccess(gate(null), '::1', undefined), 'ok');
  assert.is(metricsAccess(gate(null), '::ffff:127.0.0.1', undefined), 'ok');
  assert.is(metricsAccess(gate(null), '192.0.2.10', undefined), 403);
  assert.is(metricsAccess(gate(null), '::ffff:192.0.2.10', `Bearer ${TOKEN}`), 403, 'no token configured: a token opens nothing');
  assert.is(metricsAccess(gate(TOKEN), '127.0.0.1', undefined), 401, 'a token set is asked of loopback too');
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', `Bearer ${TOKEN}`), 'ok');
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', `bearer ${TOKEN}`), 'ok');
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', `Bearer ${TOKEN.slice(0, -1)}`), 401);
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', `Bearer ${TOKEN}x`), 401);
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', TOKEN), 401, 'the scheme is required');
  assert.is(metricsAccess(gate(TOKEN), '192.0.2.10', `Basic ${TOKEN}`), 401);
  // Behind a proxy on the same host every visitor reaches the box from loopback.
  assert.is(metricsAccess(gate(null, { trustedProxies: ['127.0.0.1'] }), '127.0.0.1', undefined), 403);
  assert.is(metricsAccess(gate(TOKEN, { trustedProxies: ['127.0.0.1'] }), '127.0.0.1', `Bearer ${TOKEN}`), 'ok');
  const allow = gate(null, { metricsAllow: ['10.1.0.0/16', '2001:db8::7'], trustedProxies: ['127.0.0.1'] });
  assert.is(metricsAccess(allow, '10.1.200.3', undefined), 'ok');
  assert.is(metricsAccess(allow, '::ffff:10.1.200.3', undefined), 'ok');
  assert.is(metricsAccess(allow, '2001:DB8::7', undefined), 'ok');
  assert.is(metricsAccess(allow, '10.2.0.1', undefined), 403);
  assert.is(metricsAccess(allow, '127.0.0.1', undefined), 403, 'a list set replaces the loopback default');
  assert.is(metricsAccess({ ...allow, metricsToken: TOKEN }, '10.1.0.9', undefined), 'ok', 'the list needs no token');
  assert.throws(() => loadConfig({ ...testEnv(tempDir()), MAILWRIGHT_METRICS_TOKEN: 'short' }), (err: Error) => err instanceof ConfigError && /metrics_token/.test(err.message));
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.1/8/2', '::1/129', '10.0.0.0/x']) {
    assert.throws(() => loadConfig({ ...testEnv(tempDir()), MAILWRIGHT_METRICS_ALLOW: bad }), (err: Error) => err instanceof ConfigError && err.message.includes('metrics_allow') && err.message.includes(bad), bad);
  }
});

test('a second app in this process has its own registry, and asks for its token over HTTP', async () => {
  let t2: TestApp | null = null;
  try {
    t2 = await startTestApp({ env: { MAILWRIGHT_METRICS_TOKEN: TOKEN } });
    assert.is(t2.app.config.metricsToken, TOKEN);
    assert.ok(t2.app.metrics && s.t.app.metrics && t2.app.metrics.registry !== s.t.app.metrics.registry);
    const none = await fetch(`${t2.url}/metrics`);
    assert.is(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.is((await fetch(`${t2.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status, 401);
    const mine = await scrape(t2.url, { authorization: `Bearer ${TOKEN}` });
    const first = await scrape();
    assert.ok(valueOf(first, 'mailwright_inbound_accepted_total') >= 1);
    assert.is(valueOf(mine, 'mailwright_inbound_accepted_total'), 0, 'the first app\'s counts are not the second\'s');
    assert.is(valueOf(mine, 'mailwright_deliveries_total'), 0);
    assert.ok(mine.types.has('nodejs_eventloop_lag_seconds'), 'default metrics on each registry');
    // An API key opens the API, not the metrics.
    assert.is((await request(`${s.t.url}/metrics`, { key: s.key })).status, 200, 'loopback, no token set: open');
  } finally {
    await t2?.stop();
  }
});

test('status class: the enhanced code first, then the reply code, then what the outcome implies', () => {
  assert.is(statusClass({ outcome: 'delivered', code: 250, enhanced: null }), '2');
  assert.is(statusClass({ outcome: 'bounced', code: 550, enhanced: '5.1.1' }), '5');
  assert.is(statusClass({ outcome: 'deferred', code: 451, enhanced: '4.7.1' }), '4');
  assert.is(statusClass({ outcome: 'deferred', code: null, enhanced: null }), '4');
  assert.is(statusClass({ outcome: 'failed', code: null, enhanced: null }), '5');
});

test.run();
