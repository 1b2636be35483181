// The serving marker (serving.ts): an empty file whose name says which process serves, so it fits on a full
// disk; one that cannot be made does not stop serve (the path and reason logged once, made later); markers of
// the release before (contents in JSON) are still read; markers of dead processes are cleared.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLog } from '../log.ts';
import { tempDir } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';
import { markServing, servingProcesses } from './serving.ts';

const dirs: string[] = [];
test.after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const dataDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};
const capture = () => {
  const lines: string[] = [];
  return { lines, log: createLog({ level: 'debug', write: (line) => lines.push(line) }) };
};
// A pid no process has: above the kernel's pid_max.
const DEAD_PID = 4_194_305;

test('the marker is an empty file named by pid and start time; removing it ends the record', () => {
  const dir = dataDir();
  const { lines, log } = capture();
  const unmark = markServing(dir, log);
  const [name] = readdirSync(join(dir, 'run'));
  assert.match(name, new RegExp(`^serve-${process.pid}-\\d+-[0-9a-f]{8}\\.pid$`));
  assert.is(statSync(join(dir, 'run', name)).size, 0);
  assert.equal(servingProcesses(dir), [process.pid]);
  unmark();
  assert.equal(servingProcesses(dir), []);
  assert.equal(lines, []);
});

test('a marker that cannot be made: serve goes on, says so once with the path, and makes it once it can', async () => {
  const dir = dataDir();
  writeFileSync(join(dir, 'run'), 'a file where the folder should be');
  const { lines, log } = capture();
  const unmark = markServing(dir, log, 50);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'warn');
    assert.is(warned.length, 1, 'said once, however often it is tried');
    assert.match(warned[0].msg, /could not make the serving marker; serving anyway, but 'mailwright restore' cannot tell that serve runs here/);
    assert.match(warned[0].path, new RegExp(`^${join(dir, 'run')}/serve-${process.pid}-`));
    assert.match(warned[0].reason, /^(EEXIST|ENOTDIR)/);
    rmSync(join(dir, 'run'));
    await eventually(() => servingProcesses(dir).includes(process.pid), 5_000, 'the marker made');
    assert.ok(lines.some((l) => l.includes('"msg":"made the serving marker"')));
  } finally {
    unmark();
  }
  assert.equal(servingProcesses(dir), []);
});

test("markers of the release before are read; those of dead processes are cleared at the next start", () => {
  const dir = dataDir();
  mkdirSync(join(dir, 'run'));
  writeFileSync(join(dir, 'run', 'serve-1234-0a1b2c3d.pid'), JSON.stringify({ pid: process.pid, started: null }));
  writeFileSync(join(dir, 'run', 'serve-77-aabbccdd.pid'), JSON.stringify({ pid: DEAD_PID, started: null }));
  writeFileSync(join(dir, 'run', `serve-${DEAD_PID}-5-00112233.pid`), '');
  assert.equal(servingProcesses(dir), [process.pid], 'only the live one counts');
  const unmark = markServing(dir, capture().log);
  assert.equal(readdirSync(join(dir, 'run')).filter((n) => n.includes(String(DEAD_PID)) || n === 'serve-77-aabbccdd.pid'), []);
  assert.is(readdirSync(join(dir, 'run')).length, 2, 'the live old-style marker and the new one');
  unmark();
});

test.run();
