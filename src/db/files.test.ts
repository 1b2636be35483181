// The data directory is private (DESIGN.md 3, catalogue SEC-01), checked on the real process: after a start
// its folders are 0700 and its files 0600, loose modes left by an older release are tightened, and a data
// directory (or a folder in it) that others can write is refused with exit 78 naming it, for serve and CLI.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startAppProcess, tempDir, testEnv } from '../testkit/app.ts';

const mode = (path: string) => lstatSync(path).mode & 0o7777;
const octal = (m: number) => `0${m.toString(8)}`;

// Every wait is bounded: a start-up or CLI run that hangs fails the file instead of stalling the suite.
setTimeout(() => {
  console.error('files.test.ts: timed out after 120 s');
  process.exit(1);
}, 120_000).unref();

test('after a start: the data dir and its folders 0700, the database, WAL, SHM and TLS files 0600', async () => {
  const dataDir = tempDir();
  // As an older release (umask 022) left it: a 0755 directory, a 0644 file in a 0755 folder.
  chmodSync(dataDir, 0o755);
  mkdirSync(join(dataDir, 'old'), { mode: 0o755 });
  chmodSync(join(dataDir, 'old'), 0o755);
  writeFileSync(join(dataDir, 'old', 'notes.txt'), 'x', { mode: 0o644 });
  chmodSync(join(dataDir, 'old', 'notes.txt'), 0o644);
  // A symlink to a file outside: neither followed nor changed.
  const outside = tempDir('mailwright-outside-');
  writeFileSync(join(outside, 'shared.txt'), 'x');
  chmodSync(join(outside, 'shared.txt'), 0o644);
  symlinkSync(join(outside, 'shared.txt'), join(dataDir, 'link.txt'));
  const env = testEnv(dataDir);
  const server = await startAppProcess(env);
  try {
    assert.is(octal(mode(dataDir)), '0700', 'a 0755 data dir is made 0700');
    const db = join(dataDir, 'mailwright.db');
    for (const file of [db, `${db}-wal`, `${db}-shm`]) assert.is(octal(mode(file)), '0600', file);
    assert.is(octal(mode(join(dataDir, 'tls'))), '0700');
    for (const file of readdirSync(join(dataDir, 'tls'))) assert.is(octal(mode(join(dataDir, 'tls', file))), '0600', file);
    assert.is(octal(mode(join(dataDir, 'old'))), '0700');
    assert.is(octal(mode(join(dataDir, 'old', 'notes.txt'))), '0600');
    assert.is(octal(mode(join(dataDir, 'test-config.toml'))), '0600');
    assert.is(octal(statSync(join(outside, 'shared.txt')).mode & 0o7777), '0644', 'the symlink was not followed');
    // Every file and folder, whatever wrote it.
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        const st = lstatSync(path);
        if (st.isSymbolicLink()) continue;
        assert.is(st.mode & 0o077, 0, `${path} is ${octal(st.mode & 0o7777)}`);
        if (st.isDirectory()) walk(path);
      }
    };
    walk(dataDir);
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});

test('the CLI creates the database 0600 too (umask 077 for every command)', async () => {
  const dataDir = tempDir();
  try {
    const res = await runCli(['key', 'create', '--name', 'ci'], testEnv(dataDir));
    assert.is(res.code, 0, res.stderr);
    assert.is(octal(mode(join(dataDir, 'mailwright.db'))), '0600');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

for (const loose of [0o777, 0o770, 0o1777]) {
  test(`a data dir of mode ${octal(loose)} is refused: exit 78 naming it, nothing created in it`, async () => {
    const dataDir = tempDir();
    const env = testEnv(dataDir);
    chmodSync(dataDir, loose);
    try {
      const res = await runCli(['serve'], env);
      assert.is(res.code, 78, res.stderr);
      assert.ok(res.stderr.includes(dataDir), res.stderr);
      assert.match(res.stderr, /can be written by/);
      assert.not.match(res.stderr, /    at /, 'no stack trace');
      assert.not.ok(existsSync(join(dataDir, 'mailwright.db')), 'no database was created in it');
      assert.is(mode(dataDir), loose, 'refused, not fixed');
      const cli = await runCli(['key', 'create', '--name', 'ci'], env);
      assert.is(cli.code, 78, 'the CLI refuses it too');
      assert.ok(cli.stderr.includes(dataDir), cli.stderr);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

test('a folder in the data dir that others can write is refused, naming the folder', async () => {
  const dataDir = tempDir();
  const env = testEnv(dataDir);
  const tls = join(dataDir, 'tls');
  mkdirSync(tls);
  chmodSync(tls, 0o777);
  try {
    const res = await runCli(['serve'], env);
    assert.is(res.code, 78, res.stderr);
    assert.ok(res.stderr.includes(tls), res.stderr);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
