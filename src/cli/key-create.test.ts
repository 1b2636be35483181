// `mailwright key create` with a scope: the checks of POST /keys, named by the command's options,
// and a key whose scope the API then applies.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request, runCli, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';

let t: TestApp;

test.before(async () => {
  t = await startTestApp({ env: { MAILWRIGHT_RATE_LIMIT: '0' } });
  await seedWorkspace(t);
});
test.after(() => t.stop());

test('key create --permission: refused with the option named, or a key with that scope', async () => {
  const unknown = await runCli(['key', 'create', '--name', 'x', '--permission', 'admin'], t.env);
  assert.is.not(unknown.code, 0);
  assert.match(unknown.stderr, /--permission: must be one of full_access, sending_access, inbox_access/);
  const noInbox = await runCli(['key', 'create', '--name', 'x', '--permission', 'inbox_access'], t.env);
  assert.is.not(noInbox.code, 0);
  assert.match(noInbox.stderr, /--inbox: is required for inbox_access/);
  const made = await runCli(['key', 'create', '--name', 'mailer', '--permission', 'sending_access'], t.env);
  assert.is(made.code, 0, made.stderr);
  const key = made.stdout.trim();
  assert.match(key, /^re_/);
  const keys = await request(`${t.api}/keys`, { key });
  assert.equal(keys.body.data.map((k: { name: string; permission: string }) => [k.name, k.permission]), [['mailer', 'sending_access']]);
  assert.is((await request(`${t.api}/domains`, { key })).body.error.code, 'insufficient_scope');
});

test.run();
