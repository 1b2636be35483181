// A sender's own one-click List-Unsubscribe pair on marketing mail (API-SPEC.md 4.2 rule 3), over real HTTP and
// SMTP: it stands only for a configured first-party integration (the domain's `unsubscribe_urls`) whose HTTPS URL
// is written in the body; any other is replaced by the box's managed pair. Transactional mail passes the
// sender's pair on as it is. PATCH /domains/:id validates and normalises the prefixes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { simpleParser } from 'mailparser';
import { request } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';

let s: OutboundScene;
let domainId: string;
let box: string;
const api = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${s.t.api}${path}`, { key: s.key, ...opts });
const setPrefixes = (unsubscribe_urls: unknown) => api(`/domains/${domainId}`, { method: 'PATCH', body: { unsubscribe_urls } });
const OWN = 'https://app.news.test/unsubscribe/42?list=weekly&u=7';
const own = (url = OWN) => ({ 'List-Unsubscribe': `<${url}>, <mailto:leave@news.test>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' });

/** A header's value as it arrived, unfolded. */
const headerOf = (raw: Buffer, name: string) => new RegExp(`^${name}: *(.*)$`, 'im').exec(raw.toString('latin1').split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' '))?.[1];

let n = 0;
/** Sends to two recipients and returns each copy's List-Unsubscribe pair and how many distinct copies went out. */
async function sent(body: Record<string, unknown>) {
  const subject = `Issue ${++n}`;
  const to = [`a${n}@dest.test`, `b${n}@dest.test`];
  const res = await s.send({ from: 'News <hello@news.test>', to, subject, message_class: 'marketing', ...body });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const messages = await eventually(() => {
    const got = s.sink.messages.filter((m) => to.some((r) => m.rcptTo.includes(r)));
    return got.flatMap((m) => m.rcptTo).length === 2 && got;
  }, 10_000, `${subject} delivered`);
  return { copies: messages.map((m) => ({ m, list: headerOf(m.raw, 'List-Unsubscribe'), post: headerOf(m.raw, 'List-Unsubscribe-Post') })) };
}
const isManaged = (list: string | undefined) => list !== undefined && list.startsWith(`<${box}/unsubscribe/`) && list.includes('<mailto:u-');

test.before(async () => {
  s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  domainId = (await s.verifiedDomain('news.test')).id;
  s.routeTo('dest.test');
  box = s.t.app.config.publicUrl.replace(/\/+$/, '');
  assert.is((await api(`/domains/${domainId}`, { method: 'PATCH', body: { marketing: true } })).status, 200);
});
test.after(() => s.stop());

test('PATCH /domains/:id unsubscribe_urls: https prefixes only, normalised, at most 10; [] clears them', async () => {
  const before = (await api(`/domains/${domainId}`)).body;
  assert.equal(before.unsubscribe_urls, []);
  const cases: Array<[unknown, string]> = [
    [['http://app.news.test/u/'], 'unsubscribe_urls.0'],
    [['app.news.test/u/'], 'unsubscribe_urls.0'],
    [['https://app.news.test/u/', 'https://user:pw@app.news.test/u/'], 'unsubscribe_urls.1'],
    [['https://app.news.test/u/#top'], 'unsubscribe_urls.0'],
    [Array.from({ length: 11 }, (_, i) => `https://app.news.test/u${i}/`), 'unsubscribe_urls'],
    ['https://app.news.test/u/', 'unsubscribe_urls'],
  ];
  for (const [value, path] of cases) {
    const res = await setPrefixes(value);
    assert.equal([res.status, res.body.error?.code, res.body.error?.errors?.[0]?.path], [400, 'validation_error', path], JSON.stringify(value));
  }
  assert.equal((await api(`/domains/${domainId}`)).body.unsubscribe_urls, [], 'a refused PATCH changes nothing');
  const set = await setPrefixes(['https://APP.news.test', 'https://app.news.test/unsubscribe/', 'https://app.news.test/']);
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.equal(set.body.unsubscribe_urls, ['https://app.news.test/', 'https://app.news.test/unsubscribe/'], 'a bare origin ends at its /; duplicates go');
  assert.equal((await setPrefixes([])).body.unsubscribe_urls, []);
});

test("without the domain's setting a sender's one-click pair is replaced by the box's, one copy per recipient", async () => {
  const { copies } = await sent({ headers: own(), html: `<p>News</p><a href="${OWN.replaceAll('&', '&amp;')}">Unsubscribe</a>` });
  assert.is(copies.length, 2);
  for (const c of copies) {
    assert.ok(isManaged(c.list), c.list);
    assert.is(c.post, 'List-Unsubscribe=One-Click');
    assert.not.match(c.m.raw.toString('latin1'), /^List-Unsubscribe: <https:\/\/app\.news\.test/m, "the sender's pair is gone");
  }
});

test('with the setting, the pair stands only when its URL is under a prefix and written in the body', async () => {
  assert.is((await setPrefixes(['https://app.news.test/unsubscribe/'])).status, 200);
  const inHtml = await sent({ headers: own(), html: `<p>News</p><a href="${OWN.replaceAll('&', '&amp;')}">Unsubscribe</a>` });
  assert.is(inHtml.copies.length, 1, 'one shared copy: the box personalises nothing');
  assert.equal([inHtml.copies[0].list, inHtml.copies[0].post], [own()['List-Unsubscribe'], 'List-Unsubscribe=One-Click']);
  const dkim = await s.dkim(inHtml.copies[0].m.raw);
  assert.equal([dkim.status, dkim.signedHeaders.includes('list-unsubscribe'), dkim.signedHeaders.includes('list-unsubscribe-post')], ['pass', true, true]);

  const inText = await sent({ headers: own(), text: `News. Leave the list: ${OWN}` });
  assert.equal(inText.copies.map((c) => c.list), [own()['List-Unsubscribe']], 'the text part counts too');

  const refused: Array<[string, Record<string, unknown>]> = [
    ['not in the body', { headers: own(), html: '<p>News without a link</p>' }],
    ['outside the prefix', { headers: own('https://app.news.test/other/42'), html: '<a href="https://app.news.test/other/42">Unsubscribe</a>' }],
    ['a look-alike host', { headers: own('https://app.news.test.evil.test/unsubscribe/42'), html: '<a href="https://app.news.test.evil.test/unsubscribe/42">Unsubscribe</a>' }],
    ['a path that climbs out', { headers: own('https://app.news.test/unsubscribe/../admin/42'), html: '<a href="https://app.news.test/unsubscribe/../admin/42">x</a>' }],
    ['without List-Unsubscribe-Post', { headers: { 'List-Unsubscribe': `<${OWN}>` }, text: OWN }],
    ['two HTTPS URLs', { headers: { ...own(), 'List-Unsubscribe': `<${OWN}>, <https://app.news.test/unsubscribe/43>` }, text: OWN }],
  ];
  for (const [why, body] of refused) {
    const { copies } = await sent(body);
    assert.is(copies.length, 2, why);
    for (const c of copies) assert.ok(isManaged(c.list), `${why}: ${c.list}`);
  }
});

test('a template send from the integration gets its own URL for {{unsubscribe_url}}, so its pair stands', async () => {
  const id = (await api('/templates', { body: { name: 'Weekly', key: 'weekly' } })).body.template.id;
  const saved = await api(`/templates/${id}/draft`, { method: 'PUT', body: { revision: 1, messageClass: 'marketing', subjectTemplate: 'Weekly', htmlTemplate: '<p>News</p><a href="{{unsubscribe_url}}">Unsubscribe</a>', textTemplate: 'News. Leave: {{unsubscribe_url}}' } });
  assert.is(saved.status, 200, JSON.stringify(saved.body));
  assert.is((await api(`/templates/${id}/publish`, { method: 'POST' })).status, 201);
  const { copies } = await sent({ template: { key: 'weekly' }, headers: own() });
  assert.equal(copies.map((c) => c.list), [own()['List-Unsubscribe']]);
  const parsed = await simpleParser(copies[0].m.raw);
  assert.ok((parsed.html as string).includes(`href="${OWN.replaceAll('&', '&amp;')}"`), parsed.html as string);
  assert.ok(parsed.text!.includes(`Leave: ${OWN}`));

  // A URL the domain does not allow: the box's link fills the body, and its pair replaces the sender's.
  const other = await sent({ template: { key: 'weekly' }, headers: own('https://elsewhere.test/u/1') });
  for (const c of other.copies) {
    assert.ok(isManaged(c.list), c.list);
    const url = /^<([^>]+)>/.exec(c.list!)![1];
    assert.ok((await simpleParser(c.m.raw)).text!.includes(`Leave: ${url}`), 'the body link is the managed one');
  }
});

test("transactional mail passes the sender's pair on as it is, and gets none from the box", async () => {
  const res = await s.send({ from: 'hello@news.test', to: ['tx@dest.test'], subject: 'Receipt', text: 'Thanks', headers: own('https://elsewhere.test/u/9') });
  assert.is(res.status, 200, JSON.stringify(res.body));
  const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('tx@dest.test')), 10_000, 'the receipt');
  assert.equal([headerOf(m.raw, 'List-Unsubscribe'), headerOf(m.raw, 'List-Unsubscribe-Post')], [own('https://elsewhere.test/u/9')['List-Unsubscribe'], 'List-Unsubscribe=One-Click']);
  const plain = await s.send({ from: 'hello@news.test', to: ['tx2@dest.test'], subject: 'Receipt 2', text: 'Thanks' });
  const m2 = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes('tx2@dest.test')), 10_000, 'the second receipt');
  assert.is(plain.status, 200);
  assert.is(headerOf(m2.raw, 'List-Unsubscribe'), undefined);
});

test.run();
