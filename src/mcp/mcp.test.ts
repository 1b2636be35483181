// The MCP server driven by the SDK's own client, over Streamable HTTP (POST /api/v1/mcp) and over stdio
// (`mailwright mcp` as a client would start it), against a real box: the tools each kind of key is offered,
// reading and searching mail, replying (the reply reaches the sink threaded and signed), drafting, filing,
// sending, results bounded in size, and an inbox key kept to its inboxes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { eventually } from '../testkit/outbound.ts';
import { CLI, login, request, runCli } from '../testkit/app.ts';

let s: InboundScene;
let other: { id: string; address: string };
const keys: Record<'full' | 'inbox' | 'sending', string> = { full: '', inbox: '', sending: '' };
const open: Client[] = [];

test.before(async () => {
  s = await startInboundScene();
  s.routeTo('sender.example');
  other = await s.createInbox(s.domain.id, 'other');
  const cookie = await login(s.t, s.email);
  const make = async (body: Record<string, unknown>) => (await request(`${s.t.api}/keys`, { body: { name: 'mcp', ...body }, cookie, headers: { origin: s.t.url } })).body.key as string;
  keys.full = s.key;
  keys.inbox = await make({ permission: 'inbox_access', inbox_ids: [s.inbox.id] });
  keys.sending = await make({ permission: 'sending_access' });
});
test.after(async () => {
  for (const c of open) await c.close().catch(() => {});
  await s.stop();
});

const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });

async function overHttp(key: string): Promise<Client> {
  const client = new Client({ name: 'mailwright-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.t.api}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  open.push(client);
  return client;
}

type Result = { isError?: boolean; content: Array<{ type: string; text: string }> };
/** A tool's answer: its JSON parsed, or the error's words (`error`). */
async function use(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ error?: string; [k: string]: unknown }> {
  const res = (await client.callTool({ name, arguments: args })) as Result;
  const text = res.content.map((c) => c.text).join('');
  return res.isError ? { error: text } : JSON.parse(text);
}

const READ = ['list_emails', 'search_emails', 'get_email', 'get_thread', 'list_inboxes'];
const ANSWER = ['send_email', 'reply_to_email', 'forward_email', 'archive_email', 'mark_spam', 'mark_read'];

test('the tools offered follow the key: everything for full access, the inbox tools, sending alone', async () => {
  const names = async (key: string) => (await (await overHttp(key)).listTools()).tools.map((t) => t.name).sort();
  assert.equal(await names(keys.full), [...READ, ...ANSWER, 'list_domains', 'list_templates', 'draft_reply', 'label_email'].sort());
  assert.equal(await names(keys.inbox), [...READ, ...ANSWER].sort());
  assert.equal(await names(keys.sending), ['get_email', 'send_email']);
  const tools = (await (await overHttp(keys.full)).listTools()).tools;
  const search = tools.find((t) => t.name === 'search_emails')!;
  assert.equal([search.inputSchema.type, search.inputSchema.required, search.annotations?.readOnlyHint], ['object', ['query'], true]);
  assert.is(tools.find((t) => t.name === 'send_email')!.annotations?.destructiveHint, true);
});

test('read: search and list find mail; get_email gives text, files and bounds; get_thread the conversation', async () => {
  const c = await overHttp(keys.full);
  const invoice = await s.receive('Invoice 4411 for November', { body: 'Please pay invoice 4411 by Friday.\n' });
  const long = await s.receive('A long letter', { body: `${'All work and no play. '.repeat(3000)}\n` });
  const found = await use(c, 'search_emails', { query: 'invoice 4411' });
  assert.equal((found.emails as Array<{ id: string }>).map((e) => e.id), [invoice]);
  const row = (found.emails as Array<Record<string, unknown>>)[0];
  assert.equal([row.subject, row.unread, row.inboxId, row.direction], ['Invoice 4411 for November', true, s.inbox.id, 'in']);
  const listed = await use(c, 'list_emails', { inbox_id: s.inbox.id, limit: 1 });
  assert.equal([(listed.emails as unknown[]).length, listed.hasMore], [1, true]);

  const email = await use(c, 'get_email', { id: invoice });
  assert.match(email.text as string, /Please pay invoice 4411 by Friday\./);
  assert.equal([email.subject, email.textTruncated, email.attachments], ['Invoice 4411 for November', false, []]);
  const big = await use(c, 'get_email', { id: long, max_chars: 1000 });
  assert.ok((big.text as string).length < 1100 && big.textTruncated === true, `bounded: ${(big.text as string).length}`);
  assert.match(big.text as string, /\[\.\.\. \d+ more characters\]$/);
  const whole = await use(c, 'get_email', { id: long });
  assert.ok((whole.text as string).length <= 20_100, 'the default bound holds');

  const reply = await api(`/emails/${invoice}/reply`, { body: { text: 'Paid today.' } });
  const thread = await use(c, 'get_thread', { id: email.threadId as string });
  assert.equal((thread.emails as Array<{ id: string }>).map((e) => e.id), [invoice, reply.body.id]);
  assert.is(thread.count, 2);

  const bad = await use(c, 'list_emails', { limit: 500 });
  assert.ok(bad.error, 'a limit over 50 is refused');
  const missing = await use(c, 'get_email', { id: 'em_nothing' });
  assert.match(missing.error!, /^404 not_found/);
  const unknownField = await use(c, 'get_email', { id: invoice, color: 'red' });
  assert.ok(unknownField.error, 'an unknown argument is refused');
});

test('act: a reply reaches the sink threaded and signed; draft_reply leaves a draft; filing and sending', async () => {
  const c = await overHttp(keys.full);
  const id = await s.receive('Lunch on Thursday?', { body: 'Are you free for lunch on Thursday?\n' });
  const messageId = (await api(`/emails/${id}`)).body.messageId;
  const answered = await use(c, 'reply_to_email', { id, text: 'Thursday suits me.' });
  assert.match(answered.id as string, /^em_/);
  const m = await eventually(() => s.sink.messages.find((x) => x.raw.toString('latin1').includes('Thursday suits me.')), 15_000, 'the reply at the sink');
  const parsed = await simpleParser(m.raw);
  assert.equal([parsed.subject, parsed.inReplyTo, m.rcptTo], ['Re: Lunch on Thursday?', `<${messageId}>`, ['bob@sender.example']]);
  assert.is((await s.dkim(m.raw)).status, 'pass');

  const draft = await use(c, 'draft_reply', { id, text: 'Or Friday?' });
  assert.match(draft.id as string, /^dr_/);
  const drafts = (await api('/drafts')).body.data as Array<{ id: string; subject: string; inReplyTo: string }>;
  assert.equal(drafts.filter((d) => d.id === draft.id).map((d) => [d.subject, d.inReplyTo]), [['Re: Lunch on Thursday?', id]]);

  assert.ok((await use(c, 'archive_email', { id })).archivedAt);
  assert.ok((await use(c, 'mark_read', { id })).readAt);
  assert.is((await use(c, 'mark_spam', { id })).category, 'spam');
  assert.is((await use(c, 'mark_spam', { id, spam: false })).category, 'primary');
  await use(c, 'label_email', { id, add: ['Lunches'] });
  const stored = (await api(`/emails/${id}`)).body;
  assert.equal([stored.labels.map((l: { name: string }) => l.name), stored.archivedAt !== null, stored.readAt !== null], [['Lunches'], true, true]);

  const sent = await use(c, 'send_email', { from: s.inbox.address, to: 'carol@sender.example', subject: 'From the agent', text: 'Hello Carol.', idempotency_key: 'agent-1' });
  const retried = await use(c, 'send_email', { from: s.inbox.address, to: 'carol@sender.example', subject: 'From the agent', text: 'Hello Carol.', idempotency_key: 'agent-1' });
  assert.is(retried.id, sent.id, 'a retry with the same key sends once');
  await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('carol@sender.example')), 15_000, 'the send at the sink');
  assert.match((await use(c, 'get_email', { id: sent.id as string })).delivery as string, /queued|sending|delivered/);
  // By template: list_templates names it and its variables; send_email renders the release.
  const made = await api('/templates', { body: { name: 'Welcome', key: 'welcome-agent' } });
  const tid = made.body.template.id as string;
  const variables = [{ key: 'name', type: 'string', required: true }];
  assert.is((await api(`/templates/${tid}/draft`, { method: 'PUT', body: { revision: 1, subjectTemplate: 'Welcome, {{ name }}', htmlTemplate: '<p>Hi {{name}}</p>', textTemplate: 'Hi {{name}}', variables, sampleData: { name: 'S' } } })).status, 200);
  assert.is((await api(`/templates/${tid}/publish`, { method: 'POST' })).status, 201);
  const listed = (await use(c, 'list_templates')).templates as Array<Record<string, unknown>>;
  assert.equal(listed.map((t) => [t.key, t.subject, (t.variables as Array<{ key: string }>).map((v) => v.key)]), [['welcome-agent', 'Welcome, {{ name }}', ['name']]]);
  await use(c, 'send_email', { from: s.inbox.address, to: 'dora@sender.example', template: { key: 'welcome-agent', variables: { name: 'Dora' } } });
  const welcome = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('dora@sender.example')), 15_000, 'the template send at the sink');
  assert.is((await simpleParser(welcome.raw)).subject, 'Welcome, Dora');
  const refused = await use(c, 'send_email', { from: 'nobody@not-ours.example', to: 'carol@sender.example', subject: 'x', text: 'x' });
  assert.match(refused.error!, /^403 domain_not_verified/);
});

test('an inbox key: its inboxes alone in search and reads; another inbox is not found; sends only from its address', async () => {
  const mine = await s.receive('Quarterly plan for the inbox key', { body: 'plan words' });
  const reply = await s.deliver(`From: bob@sender.example\r\nTo: ${other.address}\r\nSubject: Quarterly plan for another inbox\r\n\r\nplan words\r\n`, { to: [other.address] });
  const theirs = /queued as (em_\w+)/.exec(reply.text)![1];
  const c = await overHttp(keys.inbox);
  const found = await use(c, 'search_emails', { query: 'quarterly plan' });
  assert.equal((found.emails as Array<{ id: string }>).map((e) => e.id), [mine]);
  assert.match((await use(c, 'get_email', { id: theirs })).error!, /^404 not_found/);
  assert.equal(((await use(c, 'list_inboxes')).inboxes as Array<{ id: string }>).map((i) => i.id), [s.inbox.id]);
  const refused = await use(c, 'send_email', { from: other.address, to: 'carol@sender.example', subject: 'x', text: 'x' });
  assert.match(refused.error!, /^403 insufficient_scope/);
  // A tool it was not offered is unknown to it, and the API refuses the route anyway.
  const hidden = (await c.callTool({ name: 'list_domains', arguments: {} })) as Result;
  assert.ok(hidden.isError);
});

test('POST /mcp needs a credential; GET and DELETE are 405; a bad JSON-RPC body is the protocol\'s error', async () => {
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
  const accept = { accept: 'application/json, text/event-stream' };
  assert.is((await request(`${s.t.api}/mcp`, { body: init, headers: accept })).status, 401);
  for (const method of ['GET', 'DELETE']) assert.is((await api('/mcp', { method, headers: accept })).status, 405, method);
  const ok = await api('/mcp', { body: init, headers: accept });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.is(ok.body.result.serverInfo.name, 'mailwright');
  const wrong = await api('/mcp', { body: { jsonrpc: '2.0', id: 2, method: 'no/such/method' }, headers: accept });
  assert.ok(wrong.status < 500, `no 500: ${wrong.status}`);
});

test('stdio: `mailwright mcp` with an inbox key offers its tools and searches; without a usable key it exits 78', async () => {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MAILWRIGHT_API_URL: s.t.api, MAILWRIGHT_API_KEY: keys.inbox };
  const client = new Client({ name: 'mailwright-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: CLI, args: ['mcp'], env, stderr: 'pipe' }));
  open.push(client);
  assert.equal((await client.listTools()).tools.map((t) => t.name).sort(), [...READ, ...ANSWER].sort());
  const id = await s.receive('Stdio sees this one', { body: 'over standard input' });
  const found = await use(client, 'search_emails', { query: 'stdio sees' });
  assert.equal((found.emails as Array<{ id: string }>).map((e) => e.id), [id]);

  const refused = await runCli(['mcp'], { ...env, MAILWRIGHT_API_KEY: 're_not_a_key' });
  assert.equal([refused.code, refused.stdout], [78, '']);
  assert.match(refused.stderr, /refused MAILWRIGHT_API_KEY/);
  const away = await runCli(['mcp'], { ...env, MAILWRIGHT_API_URL: 'http://127.0.0.1:39999/api/v1' });
  assert.is(away.code, 78);
  assert.match(away.stderr, /did not answer \(ECONNREFUSED\)/);
  const none = await runCli(['mcp'], { ...env, MAILWRIGHT_API_KEY: '' });
  assert.is(none.code, 78);
  assert.match(none.stderr, /set MAILWRIGHT_API_KEY/);
});

test.run();
