// Hosted templates end to end over real HTTP and SMTP: every transition of API-SPEC.md section 3, concurrent
// draft writes, rendering, test sends and template sends arriving at the test kit's sink with a DKIM signature
// that verifies, release immutability, usage, and workspace isolation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { createTransport } from 'nodemailer';
import { freePort, request, seedWorkspace } from '../testkit/app.ts';
import { startOutboundScene, eventually, type OutboundScene } from '../testkit/outbound.ts';
import { run, value } from '../db/query.ts';

let s: OutboundScene;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const post = (path: string, body: unknown = {}) => api(path, { method: 'POST', body });
const put = (path: string, body: unknown) => api(path, { method: 'PUT', body });
const deliveredTo = (recipient: string) => eventually(() => s.sink.messages.find((m) => m.rcptTo.includes(recipient)), 10_000, `a message for ${recipient}`);

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_SUBMISSION_PORT: String(await freePort()), MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  await s.verifiedDomain('sender.test');
  s.routeTo('dest.test');
});
test.after(() => s.stop());

/** A template with a published release: {{name}} (string, required) and {{count}} (number, optional). */
async function published(key: string) {
  const created = await post('/templates', { name: `T ${key}`, key });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const id = created.body.template.id as string;
  const saved = await put(`/templates/${id}/draft`, {
    revision: 1,
    subjectTemplate: 'Hello {{ name }}',
    htmlTemplate: '<p>Hi {{name}}, you have {{count}} new</p>',
    textTemplate: 'Hi {{name}}, you have {{count}} new',
    variables: [
      { key: 'name', type: 'string', required: true },
      { key: 'count', type: 'number', required: false },
    ],
    sampleData: { name: 'Sample', count: 3 },
  });
  assert.is(saved.status, 200, JSON.stringify(saved.body));
  const release = await post(`/templates/${id}/publish`);
  assert.is(release.status, 201, JSON.stringify(release.body));
  return { id, versionId: release.body.version.id as string };
}

test('create from each starter, list with filters, show by id or key; keys are unique per workspace', async () => {
  for (const starter of ['blank', 'welcome', 'password-reset', 'receipt', 'notification']) {
    const res = await post('/templates', { name: `Starter ${starter}`, key: `starter-${starter}`, starter });
    assert.is(res.status, 201, JSON.stringify(res.body));
    assert.match(res.body.template.id, /^tmpl_[0-9A-Z]{26}$/);
    assert.equal(res.body.template.key, `starter-${starter}`);
    const shown = (await api(`/templates/starter-${starter}`)).body;
    assert.equal(shown.template.id, res.body.template.id, 'found by key');
    assert.is(shown.draft.revision, 1);
    assert.match(shown.draft.id, /^tmplv_/);
    assert.equal([shown.versions, shown.activeVersion, shown.usage], [[], null, []]);
    if (starter === 'blank') continue;
    // Each starter renders with its own sample data with no error, and has a text part and a preheader.
    const r = (await post(`/templates/${res.body.template.id}/render`, {})).body;
    assert.equal(r.findings.filter((f: { severity: string }) => f.severity !== 'info'), [], `${starter}: ${JSON.stringify(r.findings)}`);
    assert.ok(r.subject && r.text.length > 50 && /display:none/.test(r.html) && /role="presentation"/.test(r.html), starter);
    assert.not.match(r.html + r.text + r.subject, /\{\{/, `${starter}: every placeholder filled`);
  }
  assert.is((await post('/templates', { name: 'Again', key: 'STARTER-WELCOME' })).status, 409, 'keys are unique regardless of case');
  const bad = await post('/templates', { name: 'x', key: 'x1', starter: 'fancy' });
  assert.equal([bad.status, bad.body.error.code, bad.body.error.errors[0].path], [400, 'validation_error', 'starter']);
  assert.is((await post('/templates', { name: 'x', key: 'has space' })).status, 400);

  const list = (await api('/templates?query=PASSWORD')).body;
  assert.equal(list.data.map((t: { key: string }) => t.key), ['starter-password-reset']);
  assert.equal(Object.keys(list.data[0]).sort(), ['activeVersionId', 'createdAt', 'hasDraft', 'id', 'key', 'lifecycle', 'name', 'updatedAt']);
  assert.equal([list.data[0].hasDraft, list.data[0].lifecycle, list.data[0].activeVersionId], [true, 'active', null]);
  assert.is((await api('/templates?lifecycle=archived')).body.count, 0);
  assert.is((await api('/templates?lifecycle=gone')).status, 400);
  assert.is((await api('/templates/nope')).status, 404);
});

test('the draft: revisions, stale and missing revisions, exactly one of two concurrent writers, validation', async () => {
  const id = (await post('/templates', { name: 'Drafty', key: 'drafty' })).body.template.id;
  const ok = await put(`/templates/${id}/draft`, { revision: 1, subjectTemplate: 'One', textTemplate: 'one' });
  assert.equal([ok.status, ok.body], [200, { draft: { id: ok.body.draft.id, revision: 2 } }]);
  for (const body of [{ revision: 1, subjectTemplate: 'stale' }, { subjectTemplate: 'no revision' }]) {
    const res = await put(`/templates/${id}/draft`, body);
    assert.equal([res.status, res.body.error.code], [409, 'revision_conflict'], JSON.stringify(body));
  }
  const racers = await Promise.all(['A', 'B'].map((x) => put(`/templates/${id}/draft`, { revision: 2, subjectTemplate: x })));
  assert.equal(racers.map((r) => r.status).sort(), [200, 409], 'exactly one wins');
  const winner = racers.find((r) => r.status === 200)!;
  const draft = (await api(`/templates/${id}`)).body.draft;
  assert.is(draft.revision, 3);
  assert.is(draft.subjectTemplate, racers.indexOf(winner) === 0 ? 'A' : 'B');
  assert.is(draft.textTemplate, 'one', 'omitted fields keep their value');

  const invalid: Array<[unknown, string]> = [
    [{ variables: [{ key: '1abc', type: 'string' }] }, 'variables.0.key'],
    [{ variables: [{ key: 'a', type: 'money' }] }, 'variables.0.type'],
    [{ variables: [{ key: 'a', type: 'string' }, { key: 'a', type: 'number' }] }, 'variables.1.key'],
    [{ variables: [{ key: 'unsubscribe_url', type: 'url' }] }, 'variables.0.key'],
    [{ variables: [{ key: 'n', type: 'number' }], sampleData: { n: 'seven' } }, 'sampleData.n'],
    [{ sampleData: { undeclared: 'x' } }, 'sampleData.undeclared'],
    [{ sampleData: [1] }, 'sampleData'],
    [{ subjectTemplate: 'a\r\nBcc: x@y.z' }, 'subjectTemplate'],
    [{ extra: true }, 'body'],
  ];
  for (const [change, path] of invalid) {
    const res = await put(`/templates/${id}/draft`, { revision: 3, ...(change as object) });
    assert.equal([res.status, res.body.error?.errors?.[0]?.path], [400, path], JSON.stringify(change));
  }
  assert.is((await api(`/templates/${id}`)).body.draft.revision, 3, 'a refused write changes nothing');
});

test('publish, immutable releases, a new draft from the release, archive and restore', async () => {
  const id = (await post('/templates', { name: 'Life', key: 'life' })).body.template.id;
  assert.equal([(await post(`/templates/${id}/draft`)).status], [409], 'a draft already exists');
  await put(`/templates/${id}/draft`, { revision: 1, subjectTemplate: 'v1', textTemplate: 'first' });
  const pub = await post(`/templates/${id}/publish`);
  assert.equal([pub.status, pub.body.version.state], [201, 'published']);
  let shown = (await api(`/templates/${id}`)).body;
  assert.equal([shown.draft, shown.activeVersion.id, shown.template.activeVersionId, shown.versions.length], [null, pub.body.version.id, pub.body.version.id, 1]);
  assert.equal([(await post(`/templates/${id}/publish`)).status, (await post(`/templates/${id}/publish`)).body.error.code], [409, 'no_draft']);
  assert.is((await put(`/templates/${id}/draft`, { revision: 2, textTemplate: 'edited' })).status, 409, 'no draft to change: the release is not one');

  // The store itself refuses to change or drop a release, whoever asks.
  const refusal = (sql: string) => s.t.app.store.write(() => run(sql, pub.body.version.id)).then(() => 'written', (err: Error) => err.message);
  assert.match(await refusal("UPDATE template_versions SET text_template = 'x' WHERE id = ?"), /immutable/);
  assert.match(await refusal('DELETE FROM template_versions WHERE id = ?'), /cannot be deleted/);

  const again = await post(`/templates/${id}/draft`);
  assert.equal([again.status, again.body.draft.revision], [201, 1]);
  assert.is((await put(`/templates/${id}/draft`, { revision: 1, textTemplate: 'second' })).status, 200);
  const preview = (await post(`/templates/${id}/render`, {})).body;
  assert.is(preview.text, 'second', 'render uses the draft when there is one');
  shown = (await api(`/templates/${id}`)).body;
  assert.is(shown.activeVersion.textTemplate, 'first', 'the release is as published');
  const v2 = await post(`/templates/${id}/publish`);
  assert.is((await api(`/templates/${id}/versions/${pub.body.version.id}`)).body.version.textTemplate, 'first');
  assert.equal((await api(`/templates/${id}`)).body.versions.map((v: { number: number }) => v.number), [2, 1]);
  assert.is((await post(`/templates/${id}/render`, {})).body.text, 'second', 'with no draft, render uses the active release');
  assert.ok(v2.body.version.id !== pub.body.version.id);

  assert.equal((await post(`/templates/${id}/restore`)).status, 409, 'restore of an active template');
  const archived = await post(`/templates/${id}/archive`);
  assert.equal([archived.status, archived.body], [200, { template: { id, lifecycle: 'archived' } }]);
  assert.is((await post(`/templates/${id}/archive`)).status, 200);
  assert.equal((await api('/templates?lifecycle=archived')).body.data.map((t: { id: string }) => t.id), [id]);
  const refused = await s.send({ from: 'a@sender.test', to: ['x@dest.test'], template: { key: 'life' } });
  assert.equal([refused.status, refused.body.error.errors[0].path], [400, 'template']);
  assert.match(refused.body.error.message, /"life" is archived/);
  assert.is((await post(`/templates/${id}/test`, { to: ['x@dest.test'], from: 'a@sender.test' })).status, 400);
  const restored = await post(`/templates/${id}/restore`);
  assert.equal([restored.status, restored.body.template.lifecycle], [200, 'active']);
  assert.is((await s.send({ from: 'a@sender.test', to: ['restored@dest.test'], template: { key: 'life' } })).status, 200);
});

test('a test send renders the draft with sample data, arrives signed, is marked isTest and metered', async () => {
  const id = (await post('/templates', { name: 'Welcome', key: 'welcome', starter: 'welcome' })).body.template.id;
  const usedBefore = (await api('/account')).body.usage.recipients.used as number;
  const res = await post(`/templates/${id}/test`, { to: ['tester@dest.test'], from: 'App <app@sender.test>', data: { user_name: 'Grace <Hopper>' } });
  assert.equal([res.status, res.body.isTest], [201, true], JSON.stringify(res.body));
  const m = await deliveredTo('tester@dest.test');
  const parsed = await simpleParser(m.raw);
  assert.is(parsed.subject, 'Welcome to Acme Cloud, Grace <Hopper>');
  assert.match(parsed.html as string, /Hi Grace &lt;Hopper&gt;,/);
  assert.match(parsed.text ?? '', /Hi Grace <Hopper>,/);
  assert.match(parsed.text ?? '', /https:\/\/app\.acme\.example\/onboarding/, 'sample data fills what the call left out');
  assert.is((await s.dkim(m.raw)).status, 'pass');
  const email = (await api(`/emails/${res.body.id}`)).body;
  assert.equal([email.isTest, email.templateId, email.templateVersionId], [true, id, (await api(`/templates/${id}`)).body.draft.id]);
  assert.is((await api('/account')).body.usage.recipients.used, usedBefore + 1, 'metered like any send');
  assert.is((await api(`/templates/${id}`)).body.usage.length, 0, 'test sends are not usage of a release');

  const tooMany = await post(`/templates/${id}/test`, { to: ['1@dest.test', '2@dest.test', '3@dest.test', '4@dest.test', '5@dest.test', '6@dest.test'], from: 'app@sender.test' });
  assert.equal([tooMany.status, tooMany.body.error.errors[0].path], [400, 'to']);
  assert.is((await post(`/templates/${id}/test`, { to: ['x@dest.test'], from: 'app@unverified.test' })).status, 403);
  const wrongType = await post(`/templates/${id}/test`, { to: ['x@dest.test'], from: 'app@sender.test', data: { action_url: 'not a url' } });
  assert.equal([wrongType.status, wrongType.body.error.errors[0].path], [400, 'data.action_url']);
  assert.ok(wrongType.body.error.findings.some((f: { code: string }) => f.code === 'invalid_type'));
});

test('sending by key or id: single, batch and SMTP submission use the active release; errors carry the findings', async () => {
  const { id, versionId } = await published('digest');
  const one = await s.send({ from: 'news@sender.test', to: ['single@dest.test'], template: { key: 'digest', data: { name: 'Ada & co', count: 2 } } });
  assert.is(one.status, 200, JSON.stringify(one.body));
  const parsed = await simpleParser((await deliveredTo('single@dest.test')).raw);
  assert.equal([parsed.subject, parsed.text?.trim()], ['Hello Ada & co', 'Hi Ada & co, you have 2 new']);
  assert.match(parsed.html as string, /<p>Hi Ada &amp; co, you have 2 new<\/p>/);
  const email = (await api(`/emails/${one.body.id}`)).body;
  assert.equal([email.templateId, email.templateVersionId, email.isTest], [id, versionId, false]);

  const missing = await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { id, data: { count: 'two' } } });
  assert.equal([missing.status, missing.body.error.code], [400, 'validation_error']);
  assert.equal(missing.body.error.errors.map((e: { path: string }) => e.path).sort(), ['template.data.count', 'template.data.name']);
  assert.equal(missing.body.error.findings.filter((f: { severity: string }) => f.severity === 'error').map((f: { code: string }) => f.code).sort(), ['invalid_type', 'missing_variable']);
  assert.is((await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { key: 'digest' }, html: '<p>x</p>' })).status, 400, 'content comes from the template');
  assert.is((await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { key: 'nope' } })).status, 400);
  const subject = await s.send({ from: 'news@sender.test', to: ['subject@dest.test'], subject: 'Given subject', template: { key: 'digest', data: { name: 'B' } } });
  assert.is(subject.status, 200);
  assert.is((await simpleParser((await deliveredTo('subject@dest.test')).raw)).subject, 'Given subject');

  const batch = await api('/emails/batch', {
    method: 'POST',
    body: { emails: [{ from: 'news@sender.test', to: ['batch@dest.test'], template: { key: 'DIGEST', data: { name: 'Batch' } } }, { from: 'news@sender.test', to: ['x@dest.test'], template: { key: 'digest' } }] },
  });
  assert.equal([batch.status, batch.body.successful, batch.body.failed, batch.body.data[1].ok, batch.body.data[1].error.code], [200, 1, 1, false, 'validation_error']);
  assert.match(batch.body.data[1].error.message, /name is required/);
  assert.is((await simpleParser((await deliveredTo('batch@dest.test')).raw)).text?.trim(), 'Hi Batch, you have  new');

  const tx = createTransport({ host: '127.0.0.1', port: s.t.submissionPort!, secure: false, requireTLS: true, tls: { rejectUnauthorized: false }, auth: { user: 'app', pass: s.key } });
  const info = await tx.sendMail({
    from: 'news@sender.test',
    to: 'smtp@dest.test',
    subject: '',
    text: 'this body is ignored',
    headers: { 'X-Mailwright-Template': 'digest', 'X-Mailwright-Template-Data': JSON.stringify({ name: 'Smtp', count: 7 }) },
  });
  const smtpId = /queued as (em_[0-9A-Z]{26})/.exec(info.response)![1];
  const viaSmtp = await simpleParser((await deliveredTo('smtp@dest.test')).raw);
  assert.equal([viaSmtp.subject, viaSmtp.text?.trim()], ['Hello Smtp', 'Hi Smtp, you have 7 new']);
  assert.is(viaSmtp.headers.get('x-mailwright-template'), undefined, 'the template headers are not passed on');
  assert.is((await api(`/emails/${smtpId}`)).body.templateVersionId, versionId);
  const refused = await tx.sendMail({ from: 'news@sender.test', to: 'x@dest.test', subject: 's', text: 't', headers: { 'X-Mailwright-Template': 'digest', 'X-Mailwright-Template-Data': '{"count": 1}' } }).then(
    () => null,
    (err: { responseCode: number; response: string }) => err,
  );
  assert.is(refused?.responseCode, 554, 'a message the box cannot render is refused, as any invalid message');
  assert.match(refused!.response, /name is required/);
  tx.close();

  // Usage: the real sends of the release (single, subject, batch item, SMTP), newest last time.
  const usage = (await api(`/templates/${id}`)).body.usage;
  assert.equal(usage.map((u: { versionId: string; emails: number }) => [u.versionId, u.emails]), [[versionId, 4]]);
  assert.match(usage[0].lastSentAt, /^\d{4}-\d\d-\d\dT/);
});

test("Resend's shape, template: {id, variables}, sends like {id or key, data}; both data and variables are a 400", async () => {
  const { id, versionId } = await published('resend-shape');
  const byId = await s.send({ from: 'news@sender.test', to: ['variables@dest.test'], template: { id, variables: { name: 'Vee', count: 5 } } });
  assert.is(byId.status, 200, JSON.stringify(byId.body));
  const parsed = await simpleParser((await deliveredTo('variables@dest.test')).raw);
  assert.equal([parsed.subject, parsed.text?.trim()], ['Hello Vee', 'Hi Vee, you have 5 new']);
  assert.is((await api(`/emails/${byId.body.id}`)).body.templateVersionId, versionId);
  // Resend's `id` may be the template's alias: the key works there too.
  assert.is((await s.send({ from: 'news@sender.test', to: ['alias@dest.test'], template: { id: 'resend-shape', variables: { name: 'Al' } } })).status, 200);
  assert.is((await simpleParser((await deliveredTo('alias@dest.test')).raw)).subject, 'Hello Al');

  const emails = () => s.t.app.store.read(value<number>('SELECT count(*) FROM emails'));
  const before = await emails();
  const both = await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { id, data: { name: 'A' }, variables: { name: 'B' } } });
  assert.equal([both.status, both.body.error.code, both.body.error.errors[0].path], [400, 'validation_error', 'template']);
  assert.match(both.body.error.message, /data or variables/);
  const missing = await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { id, variables: { count: 1 } } });
  assert.equal([missing.status, missing.body.error.errors[0].path], [400, 'template.variables.name'], 'the error names the field the caller used');
  const notObject = await s.send({ from: 'news@sender.test', to: ['x@dest.test'], template: { id, variables: ['Vee'] } });
  assert.equal([notObject.status, notObject.body.error.errors[0].path], [400, 'template.variables']);
  assert.is(await emails(), before, 'nothing stored for the refusals');
});

test('{{unsubscribe_url}} in a marketing template becomes each recipient\'s own one-click link', async () => {
  const domain = (await api('/domains')).body.data.find((d: { name: string }) => d.name === 'sender.test');
  assert.is((await api(`/domains/${domain.id}`, { method: 'PATCH', body: { marketing: true } })).status, 200);
  const id = (await post('/templates', { name: 'News', key: 'news' })).body.template.id;
  await put(`/templates/${id}/draft`, { revision: 1, messageClass: 'marketing', subjectTemplate: 'News', htmlTemplate: '<p>News</p><a href="{{ unsubscribe_url }}">Unsubscribe</a>', textTemplate: 'News. Unsubscribe: {{unsubscribe_url}}' });
  const findings = (await post(`/templates/${id}/render`, {})).body.findings;
  assert.not.ok(findings.some((f: { code: string }) => f.code === 'missing_unsubscribe'));
  await post(`/templates/${id}/publish`);
  const res = await s.send({ from: 'news@sender.test', to: ['reader1@dest.test', 'reader2@dest.test'], template: { key: 'news' } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const links = await Promise.all(['reader1@dest.test', 'reader2@dest.test'].map(async (r) => {
    const m = await deliveredTo(r);
    const p = await simpleParser(m.raw);
    const header = /^List-Unsubscribe:.*?<(https?:[^>]+)>/im.exec(m.raw.toString('latin1').replace(/\r\n[ \t]+/g, ' '))![1];
    assert.ok((p.html as string).includes(`href="${header}"`), 'the body link is the List-Unsubscribe link');
    assert.ok(p.text!.includes(header));
    assert.is((await s.dkim(m.raw)).status, 'pass');
    return header;
  }));
  assert.ok(links[0] !== links[1], 'one link per recipient');
});

test('workspace isolation: another workspace neither sees nor sends this one\'s templates, and may reuse a key', async () => {
  const other = await seedWorkspace(s.t, { workspace: 'other', email: 'owner@other.test' });
  const mine = (await api('/templates/digest')).body.template.id;
  const as = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: other.key, ...opts });
  assert.is((await as(`/templates/${mine}`)).status, 404);
  assert.is((await as('/templates/digest')).status, 404);
  assert.is((await as('/templates')).body.count, 0);
  for (const path of ['render', 'publish', 'archive', 'restore', 'draft']) assert.is((await as(`/templates/${mine}/${path}`, { method: 'POST', body: {} })).status, 404, path);
  assert.is((await as(`/templates/${mine}/test`, { method: 'POST', body: { to: ['x@dest.test'], from: 'a@sender.test' } })).status, 404);
  assert.is((await as(`/templates/${mine}/draft`, { method: 'PUT', body: { revision: 1 } })).status, 404);
  const send = await as('/emails', { method: 'POST', body: { from: 'a@sender.test', to: ['x@dest.test'], template: { id: mine } } });
  assert.equal([send.status, send.body.error.errors[0].path], [400, 'template']);
  assert.is((await as('/templates', { method: 'POST', body: { name: 'Mine too', key: 'digest' } })).status, 201);
});

test.run();
