// A domain belongs to one workspace per box (catalogue TEN-01): another workspace cannot add the name, its
// bounce subdomain, a subdomain or a parent, learns nothing of who holds it, and an overlapping row left by
// an older release neither receives mail nor takes inboxes; `doctor` reports it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, runCli, seedWorkspace } from '../testkit/app.ts';
import { get, run, value } from '../db/query.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';

let s: InboundScene;
let intruder: Awaited<ReturnType<typeof seedWorkspace>>;

test.before(async () => {
  s = await startInboundScene();
  intruder = await seedWorkspace(s.t, { workspace: 'intruder' });
});
test.after(() => s.stop());

const addDomain = (name: string, key: string) => request(`${s.t.api}/domains`, { body: { name }, key });
const domainCount = async () => Number(await s.t.app.store.read(value('SELECT count(*) FROM domains')));

test('another workspace gets 409 domain_exists for the name, its bounce subdomain, a subdomain and a parent', async () => {
  const owner = (await s.t.app.store.read(get<{ id: string; name: string }>("SELECT id, name FROM workspaces WHERE name = 'default'")))!;
  await s.verifiedDomain('sub.parent.example');
  const before = await domainCount();
  for (const name of [s.domain.name, s.domain.name.toUpperCase() + '.', `bounces.${s.domain.name}`, `deep.sub.${s.domain.name}`, 'parent.example', 'x.sub.parent.example']) {
    const res = await addDomain(name, intruder.key);
    assert.is(res.status, 409, `${name}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'domain_exists');
    const text = JSON.stringify(res.body);
    assert.not.ok(text.includes(owner.id) || text.includes(owner.name), 'the answer does not name the holder');
  }
  assert.is(await domainCount(), before, 'nothing was added');
  assert.is((await addDomain('elsewhere.example', intruder.key)).status, 201, 'an unrelated name is free');
  assert.is((await addDomain(`team.${s.domain.name}`, s.key)).status, 201, 'the holder may add its own subdomains');
});

test('the name is taken by whoever adds it first, even when two workspaces race', async () => {
  const [first, second] = await Promise.all([addDomain('race.example', s.key), addDomain('race.example', intruder.key)]);
  assert.equal([first.status, second.status].sort(), [201, 409]);
});

let placeholder: { id: string };

test('an overlapping domain left by an older release gets no mail and no inboxes', async () => {
  // What an older release let through: the intruder's own row for the holder's name, inbound ready, with an
  // inbox the holder does not have.
  placeholder = (await addDomain('placeholder.example', intruder.key)).body;
  await s.t.app.store.write(function* () {
    yield* run("UPDATE domains SET name = ?, return_path = ?, inbound_status = 'ready' WHERE id = ?", s.domain.name, `bounces.${s.domain.name}`, placeholder.id);
    yield* run(
      "INSERT INTO inboxes (id, workspace_id, domain_id, local_part, address, name, created_at) VALUES ('inb_legacy', ?, ?, 'ceo', ?, 'ceo', ?)",
      intruder.workspace.id,
      placeholder.id,
      `ceo@${s.domain.name}`,
      Date.now(),
    );
  });

  const reply = await s.deliver('From: alice@sender.example\r\nTo: ceo\r\nSubject: for the holder only\r\n\r\nsecret\r\n', { to: [`ceo@${s.domain.name}`] });
  assert.is(reply.code, 550, reply.text);
  assert.equal(await s.stored('subject = ?', 'for the holder only'), [], 'nothing stored in any workspace');
  const ok = await s.deliver('From: alice@sender.example\r\nSubject: still mine\r\n\r\nhello\r\n', { to: [s.inbox.address] });
  assert.is(ok.code, 250, 'the holder still receives');
  assert.is((await s.stored('subject = ?', 'still mine'))[0].inbox_id, s.inbox.id);

  const inbox = await request(`${s.t.api}/inboxes`, { body: { domain_id: placeholder.id, local_part: 'cfo' }, key: intruder.key });
  assert.equal([inbox.status, inbox.body.error.code], [409, 'domain_exists']);
});

// `mailwright doctor` opens the data directory's file: on PostgreSQL it refuses.
test('doctor names the overlapping domain left by an older release', async () => {
  const doctor = await runCli(['doctor'], s.t.env);
  assert.is(doctor.code, 1);
  assert.ok(doctor.stdout.includes(`${s.domain.name} (${placeholder.id}) in workspace intruder overlaps ${s.domain.name} (${s.domain.id}) of workspace default`), doctor.stdout);
  assert.ok(doctor.stdout.includes(`DELETE /api/v1/domains/${placeholder.id}`), doctor.stdout);
});

test.run();
