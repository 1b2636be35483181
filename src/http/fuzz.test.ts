// Property-based fuzzing of everything a stranger or a careless client controls over HTTP (DESIGN.md
// "bad input gets a clear 4xx and changes nothing"): JSON bodies of every write route, path ids, search and
// list queries, Idempotency-Key headers and raw non-JSON bodies. For every input: never a 5xx, always the
// error envelope, and a refusal leaves the database as it was. Runs are bounded (about 20 s here);
// FUZZ_RUNS=N runs N cases per property, and a failure prints the seed that replays it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tableDigests } from '../testkit/table-digest.ts';
import { get } from '../db/query.ts';
import fc from 'fast-check';
import { request, seedWorkspace, startTestApp, login, type Reply, type TestApp } from '../testkit/app.ts';
import { trackedCases } from '../testkit/fuzz-cases.ts';

const RUNS = Number(process.env.FUZZ_RUNS) || 120;
const TIME_LIMIT_MS = 6_000;

let t: TestApp;
let owner: Awaited<ReturnType<typeof seedWorkspace>>;
let cookie: string;
const ids: Record<string, string> = {};
const cases = trackedCases();

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  owner = await seedWorkspace(t);
  cookie = await login(t, owner.email);
  // Real ids for the routes to find: a pending domain (so no send can pass the sender check and start the
  // queue, whose own writes would muddle the "nothing changed" check), an inbox, a suppression.
  ids.domain = (await request(`${t.api}/domains`, { key: owner.key, body: { name: 'fuzz.example' } })).body.id;
  ids.inbox = (await request(`${t.api}/inboxes`, { key: owner.key, body: { domain_id: ids.domain, local_part: 'fuzz' } })).body.id;
  await request(`${t.api}/suppressions`, { key: owner.key, body: { email: 'kept@fuzz.example' } });
  ids.label = (await request(`${t.api}/labels`, { key: owner.key, body: { name: 'Fuzzed' } })).body.id;
  ids.template = (await request(`${t.api}/templates`, { key: owner.key, body: { name: 'Fuzzed', key: 'fuzzed', starter: 'welcome' } })).body.template.id;
  ids.draft = (await request(`${t.api}/drafts`, { key: owner.key, body: { subject: 'Fuzzed' } })).body.id;
  ids.webhook = (await request(`${t.api}/webhooks`, { key: owner.key, body: { url: 'https://hooks.example/in', events: ['email.received'] } })).body.id;
});
test.after(async () => {
  await cases.settled();
  await t.stop();
});

/**
 * Everything the box keeps, hashed: a refusal must not change it. Left out: what every request may touch by
 * design (a key's lastUsedAt, sessions, failed-login counts), and what the box writes on its own clock (this
 * node's heartbeat, the periodic jobs' last runs).
 */
const digest = () => tableDigests(t.app.store, ['api_keys', 'sessions', 'auth_failures', 'nodes', 'job_runs']);

/**
 * Background work an earlier accepted request started (a label's rules applied to stored mail, labels.resort;
 * a correction taught to the spam filter)
 * writes on its own: it must be done before a snapshot, or a refusal is blamed for its rows.
 */
async function settled(): Promise<void> {
  await cases.settled();
  const busy = async () => (await t.app.store.read(get('SELECT 1 FROM label_resorts UNION ALL SELECT 1 FROM spam_filter_pending LIMIT 1'))) !== undefined;
  for (let i = 0; i < 200 && (await busy()); i++) await new Promise((r) => setTimeout(r, 25));
}

/** The tables whose rows differ between two digests. */
const changed = (before: Record<string, string>, after: Record<string, string>) => Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);

// Plain Errors, not uvu's: fast-check prints their message with the counterexample.
function assertClean(res: Reply, label: string): void {
  if (res.status < 200 || res.status >= 500) throw new Error(`${label}: ${res.status} ${JSON.stringify(res.body)}`);
  if (res.status >= 400 && (res.body?.error?.status !== res.status || typeof res.body.error.code !== 'string')) throw new Error(`${label}: not the envelope: ${JSON.stringify(res.body)}`);
}

// Values a client might send where any field is expected: JSON of every shape, and strings that break naive code.
const nasty = fc.constantFrom('', ' ', '\u0000', '\r\nBcc: x@evil.test', '<>', '"', "'", '\\', 'a@b', 'a@b.', '@', '__proto__', 'constructor', '%', '../../etc/passwd', '\u202e', '😀', 'NEAR(', '"foo', '*', 'x'.repeat(5000));
const scalar = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 40 }), nasty, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const junk = fc.oneof({ weight: 3, arbitrary: scalar }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, { weight: 1, arbitrary: fc.array(scalar, { maxLength: 12 }) });
const address = fc.oneof(fc.emailAddress(), fc.string({ maxLength: 40 }), nasty, fc.tuple(fc.string({ maxLength: 12 }), fc.emailAddress()).map(([n, a]) => `${n} <${a}>`));

/** A body with the route's own field names (some valid-looking, some junk) and stray keys. */
const bodyOf = (fields: Record<string, fc.Arbitrary<unknown>>) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, fc.oneof(v, junk)])), { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...Object.keys(fields)), fc.string({ maxLength: 10 })), junk, { maxKeys: 6 }) },
    { weight: 1, arbitrary: junk },
  );

const templateData = fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('user_name', 'action_url', 'constructor', 'toString')), fc.oneof(fc.string({ maxLength: 40 }), fc.integer(), fc.boolean(), fc.constant(null), nasty), { maxKeys: 4 });
const variable = bodyOf({ key: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('name', 'unsubscribe_url', '__proto__')), type: fc.constantFrom('string', 'number', 'url', 'money'), required: fc.boolean() });
const draftBody = {
  revision: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.string({ maxLength: 4 })),
  name: fc.string({ maxLength: 40 }),
  subjectTemplate: fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{{name}}', '{{ }}', '{{{x}}}', 'a\r\nb')),
  htmlTemplate: fc.string({ maxLength: 120 }),
  textTemplate: fc.string({ maxLength: 120 }),
  variables: fc.array(variable, { maxLength: 3 }),
  sampleData: templateData,
  messageClass: fc.constantFrom('transactional', 'marketing', 'x'),
};

const scheduledAt = fc.oneof(fc.string({ maxLength: 40 }), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.constantFrom('2026-11-25T09:30:00', '2999-01-01T00:00:00Z', '2026-02-30T00:00:00Z'));
const webhookBody = {
  url: fc.oneof(fc.webUrl(), fc.string({ maxLength: 40 }), fc.constantFrom('http://127.0.0.1/x', 'https://10.0.0.1/', 'https://a:b@x.example/', 'javascript:alert(1)')),
  events: fc.array(fc.constantFrom('*', 'email.received', 'email.nope', ''), { maxLength: 3 }),
  inbox_id: fc.oneof(fc.constant(null), fc.string({ maxLength: 30 })),
  domain_id: fc.oneof(fc.constant(null), fc.string({ maxLength: 30 })),
  description: fc.string({ maxLength: 60 }),
};
const sendBody = {
  from: address,
  to: fc.oneof(address, fc.array(address, { maxLength: 4 })),
  cc: fc.array(address, { maxLength: 3 }),
  subject: fc.string({ maxLength: 100 }),
  text: fc.string({ maxLength: 200 }),
  html: fc.string({ maxLength: 200 }),
  headers: fc.dictionary(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 }), { maxKeys: 4 }),
  attachments: fc.array(fc.record({ filename: fc.string({ maxLength: 20 }), content: fc.base64String({ maxLength: 40 }), content_type: fc.string({ maxLength: 30 }) }), { maxLength: 2 }),
  tags: fc.array(fc.record({ name: fc.string({ maxLength: 10 }), value: fc.string({ maxLength: 10 }) }), { maxLength: 2 }),
  labels: fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
  message_class: fc.constantFrom('transactional', 'marketing', 'bulk'),
  in_reply_to: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('<a@b>', 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV', '<>', 'a b@c')),
  template: bodyOf({ key: fc.oneof(fc.string({ maxLength: 12 }), fc.constant('fuzzed')), id: fc.string({ maxLength: 30 }), data: templateData }),
  scheduled_at: scheduledAt,
};

const ruleBody = {
  direction: fc.constantFrom('in', 'out', null, 'both'),
  inbox_id: fc.oneof(fc.constant(null), fc.string({ maxLength: 30 })),
  from: fc.string({ maxLength: 40 }),
  to: fc.string({ maxLength: 40 }),
  subject: fc.string({ maxLength: 40 }),
  skip_inbox: fc.boolean(),
};

interface Route {
  method: string;
  path: (id: string) => string;
  body: fc.Arbitrary<unknown>;
  session?: boolean;
}

const id = (real: () => string) => fc.oneof(fc.constant(null), fc.string({ maxLength: 30 }), nasty).map((s) => (s === null ? real() : encodeURIComponent(String(s))));

const ROUTES: Route[] = [
  { method: 'POST', path: () => '/emails', body: bodyOf(sendBody) },
  { method: 'POST', path: () => '/emails/batch', body: fc.oneof(bodyOf({ emails: fc.array(bodyOf(sendBody), { maxLength: 3 }) }), fc.array(bodyOf(sendBody), { maxLength: 3 })) },
  { method: 'PATCH', path: (i) => `/emails/${i}`, body: bodyOf({ read: fc.boolean(), archived: fc.boolean(), category: fc.constantFrom('primary', 'updates', 'spam', 'x'), important: fc.boolean(), trashed: fc.boolean(), learn: fc.boolean() }) },
  { method: 'POST', path: () => '/emails/trash/empty', body: fc.constant(undefined) },
  { method: 'DELETE', path: (i) => `/emails/${i}`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/emails/${i}/labels`, body: bodyOf({ add: fc.array(fc.string({ maxLength: 20 }), { maxLength: 12 }), remove: fc.array(fc.string(), { maxLength: 3 }), create: fc.boolean() }) },
  { method: 'POST', path: () => '/domains', body: bodyOf({ name: fc.oneof(fc.domain(), fc.string({ maxLength: 30 })) }) },
  { method: 'PATCH', path: (i) => `/domains/${i}`, body: bodyOf({ marketing: fc.boolean(), open_tracking: fc.boolean(), click_tracking: fc.boolean() }) },
  { method: 'PATCH', path: (i) => `/domains/${i}`, body: bodyOf({ mta_sts_mode: fc.oneof(fc.constantFrom('testing', 'enforce', 'none', 'ENFORCE'), nasty) }) },
  { method: 'POST', path: (i) => `/domains/${i}/inbound/setup`, body: fc.constant(undefined) },
  { method: 'POST', path: () => '/inboxes', body: bodyOf({ domain_id: fc.constantFrom('dom_x', ''), local_part: fc.string({ maxLength: 70 }), name: fc.string({ maxLength: 210 }) }) },
  { method: 'PATCH', path: (i) => `/inboxes/${i}`, body: bodyOf({ name: fc.string({ maxLength: 210 }), status: fc.constantFrom('active', 'disabled', 'gone') }) },
  { method: 'PUT', path: (i) => `/inboxes/${i}/forwarding`, body: bodyOf({ forward_to: fc.oneof(address, fc.constant(null)) }) },
  { method: 'POST', path: () => '/suppressions', body: bodyOf({ email: address, scope: fc.constantFrom('all', 'marketing', 'x'), reason: fc.constantFrom('manual', 'complaint') }) },
  { method: 'DELETE', path: (i) => `/suppressions/${i}`, body: fc.constant(undefined) },
  { method: 'POST', path: () => '/spam/allow', body: bodyOf({ entry: fc.oneof(address, fc.domain(), nasty) }) },
  { method: 'POST', path: () => '/spam/block', body: bodyOf({ entry: fc.oneof(address, fc.domain(), nasty) }) },
  { method: 'DELETE', path: (i) => `/spam/block/${i}`, body: fc.constant(undefined) },
  { method: 'POST', path: () => '/keys', body: bodyOf({ name: fc.string({ maxLength: 120 }) }), session: true },
  { method: 'POST', path: () => '/keys', body: bodyOf({ name: fc.constant('scoped'), permission: fc.oneof(fc.constantFrom('full_access', 'sending_access', 'inbox_access', 'admin'), nasty), domain_id: fc.oneof(fc.constantFrom('dom_x', ''), nasty), inbox_ids: fc.oneof(fc.array(fc.constantFrom('inb_x', ''), { maxLength: 3 }), nasty) }), session: true },
  { method: 'DELETE', path: (i) => `/keys/${i}`, body: fc.constant(undefined), session: true },
  { method: 'POST', path: () => '/auth/login', body: bodyOf({ email: address, password: fc.string({ maxLength: 40 }) }) },
  { method: 'POST', path: () => '/labels', body: bodyOf({ name: fc.string({ maxLength: 120 }), color: fc.string({ maxLength: 8 }), skip_inbox: fc.boolean(), rules: fc.array(bodyOf(ruleBody), { maxLength: 3 }), apply_to_existing: fc.boolean(), dry_run: fc.boolean() }) },
  { method: 'PATCH', path: (i) => `/labels/${i}`, body: bodyOf({ name: fc.string({ maxLength: 120 }), color: fc.string({ maxLength: 8 }), skip_inbox: fc.boolean(), apply_to_existing: fc.boolean() }) },
  { method: 'POST', path: (i) => `/labels/${i}/rules`, body: bodyOf({ ...ruleBody, apply_to_existing: fc.boolean(), dry_run: fc.boolean() }) },
  { method: 'DELETE', path: (i) => `/labels/${i}/rules/${i}`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/emails/${i}/cancel`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/emails/${i}/reply`, body: bodyOf({ text: fc.string({ maxLength: 40 }), html: fc.string({ maxLength: 40 }), reply_all: fc.oneof(fc.boolean(), nasty), draft: fc.oneof(fc.boolean(), nasty), cc: fc.oneof(address, fc.array(address, { maxLength: 3 })) }) },
  { method: 'POST', path: () => '/mcp', body: bodyOf({ jsonrpc: fc.constantFrom('2.0', '1.0'), id: fc.oneof(fc.integer(), fc.string({ maxLength: 10 })), method: fc.constantFrom('initialize', 'tools/list', 'tools/call', 'ping', 'nope'), params: bodyOf({ name: fc.constantFrom('send_email', 'get_email', 'search_emails', 'reply_to_email', 'label_email', 'draft_reply', 'nope'), arguments: bodyOf({ ...sendBody, id: fc.oneof(fc.constant('em_01ARZ3NDEKTSV4RRFFQ69G5FAV'), nasty), query: fc.oneof(fc.string({ maxLength: 40 }), nasty), limit: fc.integer() }) }) }) },
  { method: 'POST', path: (i) => `/emails/${i}/forward`, body: bodyOf({ to: fc.oneof(address, fc.array(address, { maxLength: 3 })), text: fc.string({ maxLength: 40 }) }) },
  { method: 'PATCH', path: (i) => `/emails/${i}`, body: bodyOf({ scheduled_at: scheduledAt, read: fc.boolean() }) },
  { method: 'POST', path: () => '/drafts', body: bodyOf(sendBody) },
  { method: 'PUT', path: (i) => `/drafts/${i}`, body: bodyOf(sendBody) },
  { method: 'POST', path: (i) => `/drafts/${i}/send`, body: bodyOf({ scheduled_at: scheduledAt }) },
  { method: 'DELETE', path: (i) => `/drafts/${i}`, body: fc.constant(undefined) },
  { method: 'DELETE', path: (i) => `/attachments/${i}`, body: fc.constant(undefined) },
  { method: 'POST', path: () => '/webhooks', body: bodyOf(webhookBody) },
  { method: 'PATCH', path: (i) => `/webhooks/${i}`, body: bodyOf({ ...webhookBody, enabled: fc.boolean() }) },
  { method: 'POST', path: (i) => `/webhooks/${i}/replay`, body: bodyOf({ since: scheduledAt, until: scheduledAt, status: fc.constantFrom('pending', 'failed', 'x') }) },
  { method: 'POST', path: (i) => `/webhooks/${i}/deliveries/${i}/replay`, body: fc.constant(undefined) },
  { method: 'POST', path: () => '/templates', body: bodyOf({ name: fc.string({ maxLength: 210 }), key: fc.oneof(fc.string({ maxLength: 110 }), fc.constantFrom('fuzzed', 'FUZZED', 'tmpl_x')), starter: fc.constantFrom('blank', 'welcome', 'fancy') }) },
  { method: 'PUT', path: (i) => `/templates/${i}/draft`, body: bodyOf(draftBody) },
  { method: 'POST', path: (i) => `/templates/${i}/draft`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/templates/${i}/render`, body: bodyOf({ data: templateData }) },
  { method: 'POST', path: (i) => `/templates/${i}/test`, body: bodyOf({ to: fc.oneof(address, fc.array(address, { maxLength: 7 })), from: address, data: templateData }) },
  { method: 'POST', path: (i) => `/templates/${i}/publish`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/templates/${i}/archive`, body: fc.constant(undefined) },
  { method: 'POST', path: (i) => `/templates/${i}/restore`, body: fc.constant(undefined) },
];

const realId: Record<string, () => string> = { emails: () => 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV', domains: () => ids.domain, inboxes: () => ids.inbox, suppressions: () => 'kept%40fuzz.example', keys: () => 'key_x', labels: () => ids.label, templates: () => ids.template, drafts: () => ids.draft, webhooks: () => ids.webhook, attachments: () => 'att_01ARZ3NDEKTSV4RRFFQ69G5FAV' };

test('every write route: no 5xx, the envelope on every refusal, and a refusal changes nothing', async () => {
  const idempotencyKey = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 300 }));
  await fc.assert(
    fc.asyncProperty(fc.nat(ROUTES.length - 1), idempotencyKey, fc.gen(), cases.track(async (n, key, gen) => {
      const route = ROUTES[n];
      const resource = route.path('').split('/')[1];
      const path = route.path(gen(() => id(realId[resource] ?? (() => 'x'))));
      const body = gen(() => route.body);
      const headers: Record<string, string> = key === undefined ? {} : { 'idempotency-key': encodeURIComponent(key).slice(0, 300) };
      // The MCP transport reads only requests that accept its answer (406 otherwise): let most reach the tools.
      if (path === '/mcp' && gen(() => fc.nat(3)) > 0) headers.accept = 'application/json, text/event-stream';
      await settled();
      const before = await digest();
      const res = await request(`${t.api}${path}`, { method: route.method, body: body === undefined ? undefined : JSON.stringify(body), headers, ...(route.session ? { cookie } : { key: owner.key }) });
      const label = `${route.method} ${path} ${JSON.stringify(body)?.slice(0, 300)}`;
      assertClean(res, label);
      const tables = res.status >= 400 ? changed(before, await digest()) : [];
      if (tables.length) throw new Error(`${label} refused with ${res.status} ${res.body.error.code} but changed ${tables.join(', ')}`);
    })),
    { numRuns: RUNS * 4, interruptAfterTimeLimit: TIME_LIMIT_MS * 2, includeErrorInReport: true },
  );
});

test('raw bodies that are not JSON, or not what they claim: 4xx, never 5xx, nothing changed', async () => {
  const contentType = fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', '', 'application/problem+json');
  const raw = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), fc.constantFrom('{', '[]', '[' .repeat(40), '{"__proto__":{"x":1}}', 'null', '1e999', '"\\ud800"', '{"a":1,"a":2}'));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES.filter((r) => !r.path('x').includes('x')).map((r) => ROUTES.indexOf(r))), contentType, raw, cases.track(async (n, type, text) => {
      const route = ROUTES[n];
      await settled();
      const before = await digest();
      const res = await request(`${t.api}${route.path('')}`, { method: route.method, body: text, headers: type ? { 'content-type': type } : {}, ...(route.session ? { cookie } : { key: owner.key }) });
      assertClean(res, `${route.method} ${type} ${JSON.stringify(text).slice(0, 200)}`);
      const tables = res.status >= 400 ? changed(before, await digest()) : [];
      if (tables.length) throw new Error(`${route.method} ${type} refused with ${res.status} but changed ${tables.join(', ')}`);
    })),
    { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
  );
});

test('search and list queries: any text in any parameter is 200 or a 400, never a 5xx', async () => {
  const params = fc.dictionary(
    fc.constantFrom('query', 'direction', 'status', 'domain', 'inbox_id', 'label', 'archived', 'category', 'important', 'include_spam', 'trashed', 'from', 'to', 'unread', 'after', 'before', 'limit', 'offset', 'reason', 'lifecycle', 'source_ip', 'disposition', 'aligned'),
    fc.oneof(fc.string({ maxLength: 60 }), nasty, fc.constantFrom('"', '(', ')', 'a OR', 'NOT x', 'x*', '*', '^a', 'subject:x', '{a b}:c', '(('.repeat(500), 'a '.repeat(600), '-1', '1e3', '2026-13-45')),
    { maxKeys: 5 },
  );
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('/emails', '/domains', '/inboxes', '/suppressions', '/keys', '/templates', '/drafts', '/webhooks', 'dmarc-reports', 'tls-reports', 'rejected-reports'), params, async (list, query) => {
      const path = list.startsWith('/') ? list : `/domains/${ids.domain}/${list}`;
      const res = await request(`${t.api}${path}?${new URLSearchParams(query as Record<string, string>)}`, { key: owner.key });
      assertClean(res, `${path} ${JSON.stringify(query).slice(0, 300)}`);
      if (res.status === 200) assert.ok(Array.isArray(res.body.data) && res.body.count === res.body.data.length);
    }),
    { numRuns: RUNS * 2, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
  );
  assert.is((await request(`${t.url}/healthz`)).status, 200, 'still up and healthy');
});

test.run();
