// The CLI's commands that read the box (or act on what it must already hold) never invent one: on a data
// directory without a database they exit 78, naming the file and the setting, and create nothing there.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir, testEnv } from './testkit/app.ts';

const base = tempDir();
const env = testEnv(base); // writes its config file into base
test.after(() => rmSync(base, { recursive: true, force: true }));

// An empty directory (a fresh `mkdir`) for some, one that does not exist for the others: neither is touched.
const COMMANDS: Array<[string[], 'empty' | 'missing']> = [
  [['queue', 'list'], 'empty'],
  [['queue', 'flush'], 'missing'],
  [['doctor'], 'empty'],
  [['user', 'unlock', 'owner@example.test'], 'missing'],
  [['dkim', 'rotate', 'example.test'], 'missing'],
  [['backup', join(base, 'copy.mwbackup')], 'empty'],
];

for (const [args, kind] of COMMANDS) {
  test(`${args.join(' ')} on a data directory ${kind === 'empty' ? 'without a database' : 'that does not exist'}: exit 78, nothing created`, async () => {
    const dataDir = join(base, `${kind}-${args.slice(0, 2).join('-').replace(/[^a-z-]/g, '')}`);
    if (kind === 'empty') mkdirSync(dataDir);
    const res = await runCli(args, { ...env, MAILWRIGHT_DATA_DIR: dataDir });
    assert.is(res.code, 78, res.stderr + res.stdout);
    assert.ok(res.stderr.startsWith(`mailwright: no database at ${join(dataDir, 'mailwright.db')}: `), res.stderr);
    assert.match(res.stderr, /data_dir \(MAILWRIGHT_DATA_DIR\)/);
    assert.not.match(res.stdout, /queue is empty/i);
    if (kind === 'empty') assert.equal(readdirSync(dataDir), [], 'nothing written into the directory');
    else assert.not.ok(existsSync(dataDir), 'the directory is not made');
    assert.not.ok(existsSync(join(base, 'copy.mwbackup')));
  });
}

test('the commands that set a box up still make its database on first use', async () => {
  const fresh = join(base, 'fresh');
  const res = await runCli(['key', 'create', '--name', 'first'], { ...env, MAILWRIGHT_DATA_DIR: fresh });
  assert.is(res.code, 0, res.stderr);
  assert.ok(existsSync(join(fresh, 'mailwright.db')));
  const list = await runCli(['queue', 'list'], { ...env, MAILWRIGHT_DATA_DIR: fresh });
  assert.equal([list.code, list.stdout], [0, 'The queue is empty.\n']);
});

test.run();
