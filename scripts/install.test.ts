// The install script, step by step, under a scratch root (MAILWRIGHT_INSTALL_ROOT: no user account or
// systemctl on this machine): what it writes, with which modes, that a second run changes nothing it should
// not (the operator's configuration above all), what it prints, and its refusal of a Node.js too old.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from '../src/testkit/app.ts';

// What install.sh installs keeps its state in the data directory (no database_url): the installed command run
// below must not be told of the test kit's PostgreSQL, in a run of the suite on it.
delete process.env.MAILWRIGHT_TEST_STORE;

const run = (root: string, env: Record<string, string> = {}, args: string[] = []) =>
  spawnSync('bash', [join(ROOT, 'scripts/install.sh'), ...args], { env: { ...process.env, MAILWRIGHT_INSTALL_ROOT: root, ...env }, encoding: 'utf8' });
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

test('installs the data directory, the configuration and the unit, idempotently, and says what is next', () => {
  const root = tempDir('install-');
  const first = run(root);
  assert.is(first.status, 0, first.stderr + first.stdout);
  const config = join(root, 'etc/mailwright/mailwright.toml');
  assert.is(readFileSync(config, 'utf8'), readFileSync(join(ROOT, 'config/mailwright.example.toml'), 'utf8'));
  assert.is(mode(config), '640');
  assert.is(mode(join(root, 'var/lib/mailwright')), '700');
  const unit = readFileSync(join(root, 'etc/systemd/system/mailwright.service'), 'utf8');
  assert.match(unit, new RegExp(`ExecStart=${ROOT.replace(/\/$/, '')}/scripts/mailwright serve`));
  assert.match(unit, /ExecReload=\/bin\/kill -HUP \$MAINPID/);
  assert.match(first.stdout, /This box's own DNS[\s\S]*PTR/);
  assert.match(first.stdout, /1\. sudoedit \/etc\/mailwright\/mailwright.toml[\s\S]*2\. sudo systemctl enable --now mailwright[\s\S]*3\. sudo mailwright setup link/);
  // The installed command reaches the service's configuration and data directory from anywhere.
  const bin = join(root, 'usr/local/bin/mailwright');
  assert.is(mode(bin), '755');
  const made = spawnSync(bin, ['workspace', 'create', 'via-wrapper'], { cwd: tempDir('elsewhere-'), encoding: 'utf8' });
  assert.is(made.status, 0, made.stderr);
  assert.match(made.stdout.trim(), /^ws_/);
  assert.ok(statSync(join(root, 'var/lib/mailwright/mailwright.db')).isFile(), 'the database is in the data directory, not the working directory');

  writeFileSync(config, 'hostname = "mx.example.com"\n');
  const second = run(root);
  assert.is(second.status, 0, second.stderr);
  assert.is(readFileSync(config, 'utf8'), 'hostname = "mx.example.com"\n', 'the operator configuration is kept');
  assert.match(second.stdout, /mailwright.service is up to date/);
  assert.match(second.stdout, /usr\/local\/bin\/mailwright is up to date/);
  assert.match(second.stdout, /for the box's host name mx\.example\.com/);
});

test('offers no DNS record for a host name other servers cannot find, and says what to set', () => {
  for (const name of ['vm', 'localhost', 'box.localdomain', '203.0.113.7']) {
    const root = tempDir('install-');
    mkdirSync(join(root, 'etc/mailwright'), { recursive: true });
    writeFileSync(join(root, 'etc/mailwright/mailwright.toml'), `hostname = "${name}"\n`);
    const res = run(root);
    assert.is(res.status, 0, res.stderr);
    assert.ok(res.stdout.includes(`The box's host name is "${name}", which other mail servers cannot find`), res.stdout);
    assert.match(res.stdout, /Set hostname in \S+mailwright\.toml to the box's public name, such as mail\.example\.com/);
    assert.not.ok(res.stdout.includes(`${name}.  A`), `no A record offered for ${name}`);
  }
});

test('refuses a Node.js older than the one the box needs', () => {
  const bin = tempDir('fake-node-');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'node'), '#!/bin/sh\necho 18.19.0\n');
  chmodSync(join(bin, 'node'), 0o755);
  const old = run(tempDir('install-'), { PATH: `${bin}:${process.env.PATH}` });
  assert.is(old.status, 1);
  assert.match(old.stderr, /Node\.js 18\.19\.0 is too old: Mailwright needs 20\.18\.1 or later/);
});

test('offers rspamd, and with --with-rspamd sets it up to learn in Redis, keeping a setting already there', () => {
  const plain = run(tempDir('install-'));
  assert.is(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, /To filter spam with rspamd instead of the built-in filter: sudo scripts\/install\.sh --with-rspamd/);
  assert.not.match(plain.stdout, /== rspamd/);

  const root = tempDir('install-');
  const first = run(root, {}, ['--with-rspamd']);
  assert.is(first.status, 0, first.stderr);
  assert.match(first.stdout, /== rspamd\n\(skipped under MAILWRIGHT_INSTALL_ROOT: apt-get install rspamd redis-server\)/);
  const redis = join(root, 'etc/rspamd/local.d/redis.conf');
  assert.is(readFileSync(redis, 'utf8'), 'servers = "127.0.0.1";\n');
  assert.match(first.stdout, /Set spam_filter = "rspamd" in \S+\/etc\/mailwright\/mailwright\.toml, then restart/);
  assert.not.match(first.stdout, /--with-rspamd/, 'no offer once it is done');

  writeFileSync(redis, 'servers = "10.0.0.7";\n');
  const second = run(root, {}, ['--with-rspamd']);
  assert.is(second.status, 0, second.stderr);
  assert.is(readFileSync(redis, 'utf8'), 'servers = "10.0.0.7";\n', "the operator's Redis setting is kept");
  assert.match(second.stdout, /redis\.conf exists: left as it is/);

  const wrong = run(tempDir('install-'), {}, ['--with-spamassassin']);
  assert.is(wrong.status, 2);
  assert.match(wrong.stderr, /unknown option --with-spamassassin \(usage: scripts\/install\.sh \[--with-rspamd\]\)/);
});

test.run();
