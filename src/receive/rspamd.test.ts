// spam_filter = "rspamd" end to end: real SMTP to the MX listener, Debian's rspamd on 127.0.0.1
// (.ci/run installs and starts it). GTUBE comes out of rspamd as a rejecting Signal on the analysed message the
// writer files, a plain message as one leaning to ham; the owner's move to and from Spam is told to rspamd's
// controller; and an rspamd that is down never costs a message: 250, filed without a verdict, a log line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { freePort, request } from '../testkit/app.ts';
import { watchEvidence } from '../testkit/evidence.ts';
import { startInboundScene, type InboundScene } from '../testkit/inbound.ts';
import { until } from '../testkit/within.ts';
import { GTUBE } from '../filter/tokens.ts';
import type { Signal } from '../filter/signals.ts';

const installed = spawnSync('rspamd', ['--version'], { encoding: 'utf8' }).status === 0;
let scene: InboundScene;
let filed: Signal[][];

test.before(async () => {
  scene = await startInboundScene({ env: { MAILWRIGHT_SPAM_FILTER: 'rspamd' } });
  filed = watchEvidence(scene.t);
});
test.after(() => scene.stop());

const message = (subject: string, body: string) =>
  `From: alice@sender.example\nTo: ${scene.inbox.address}\nSubject: ${subject}\nMessage-ID: <${randomUUID()}@sender.example>\nDate: ${new Date().toUTCString()}\n\n${body}\n`;
const logged = (msg: string) => scene.t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === msg);
const rspamdOf = (evidence: Signal[]) => evidence.filter((s) => s.kind === 'rspamd');

test('rspamd down: the message is accepted and filed without its verdict, and the box says why', async () => {
  const configured = scene.t.app.config.rspamdUrl;
  // As a reload with another rspamd_url would (the key is read at every message).
  scene.t.app.config.rspamdUrl = `http://127.0.0.1:${await freePort()}`;
  try {
    const reply = await scene.deliver(message('while rspamd is down', 'Hello Bob.'), {});
    assert.is(reply.code, 250, reply.text);
    assert.equal(rspamdOf(filed.at(-1)!), []);
    const line = logged('rspamd gave no verdict; the message is filed without it').at(-1);
    assert.ok(line && line.level === 'warn' && /could not be reached: ECONNREFUSED/.test(String(line.problem)), JSON.stringify(line));
    const metrics = await (await fetch(`${scene.t.url}/metrics`)).text();
    assert.match(metrics, /mailwright_rspamd_checks_total\{outcome="unavailable"\} 1\n/);
  } finally {
    scene.t.app.config.rspamdUrl = configured;
  }
});

if (!installed) {
  console.log('receive/rspamd.test.ts: not run: rspamd not installed (apt-get install rspamd redis-server; .ci/run does): GTUBE and corrections through rspamd are not checked');
  test.skip('GTUBE through rspamd becomes a rejecting rspamd Signal on the analysed message; a plain message leans to ham', () => {});
  test.skip("the owner's move to Spam and back is told to rspamd's controller", () => {});
} else {
  test('GTUBE through rspamd becomes a rejecting rspamd Signal on the analysed message; a plain message leans to ham', async () => {
    assert.is((await scene.deliver(message('test', `The anti-spam test string:\n${GTUBE}`), {})).code, 250);
    const [gtube] = rspamdOf(filed.at(-1)!);
    assert.ok(gtube, `no rspamd verdict (is rspamd running? .ci/run starts it): ${JSON.stringify(logged('rspamd gave no verdict; the message is filed without it').at(-1))}`);
    assert.is(gtube.weight, 0.99);
    assert.match(gtube.detail, /^rspamd: reject \(score [\d.]+ of [\d.]+\).*GTUBE/);

    assert.is((await scene.deliver(message('Lunch on Thursday', 'Hi Bob,\n\nShall we meet for lunch on Thursday at noon, at the usual place by the river?\n\nAlice'), {})).code, 250);
    const [plain] = rspamdOf(filed.at(-1)!);
    assert.ok(plain && plain.weight < 0.5, JSON.stringify(plain));
    const metrics = await (await fetch(`${scene.t.url}/metrics`)).text();
    assert.match(metrics, /mailwright_rspamd_checks_total\{outcome="answered"\} 2\n/);
  });

  test("the owner's move to Spam and back is told to rspamd's controller", async () => {
    const words = Array.from({ length: 30 }, () => randomUUID().slice(0, 8)).join(' ');
    assert.is((await scene.deliver(message('Cheap watches', `Replica watches at the best prices online ${words}`), {})).code, 250);
    const id = (await scene.stored()).at(-1)!.id;
    const taught = (as: string) => logged("told rspamd the owner's correction").filter((l) => l.emailId === id && l.as === as);
    const moved = await request(`${scene.t.api}/emails/${id}`, { method: 'PATCH', key: scene.key, body: { category: 'spam', learn: false } });
    assert.is(moved.status, 200, JSON.stringify(moved.body));
    await until(10_000, 'rspamd told of the move to Spam', () => taught('spam').length === 1);
    assert.is(taught('spam')[0].answer, 'learned as spam');
    // Marking it read changes no category: nothing is told.
    await request(`${scene.t.api}/emails/${id}`, { method: 'PATCH', key: scene.key, body: { read: true } });
    assert.is((await request(`${scene.t.api}/emails/${id}`, { method: 'PATCH', key: scene.key, body: { category: 'primary', learn: false } })).status, 200);
    await until(10_000, 'rspamd told of the move out of Spam', () => taught('ham').length === 1);
    assert.match(String(taught('ham')[0].answer), /learned as ham|already learned/);
    assert.is(taught('spam').length, 1);
  });
}

test.run();
