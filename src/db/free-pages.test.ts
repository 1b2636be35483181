// The database gives the disk back the pages deleted mail leaves free (free-pages.ts): a new database is in
// auto_vacuum=INCREMENTAL mode and the reclaim cuts the file by what was freed, keeping every row; a few free
// pages are left for the next mail; a database created before that mode is left as it is, and its backup
// restores converted. And the running box does it by itself after mail is deleted through the API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { databasePath, openDatabase, type Db } from './open.ts';
import { GroupCommit } from './group-commit.ts';
import { RECLAIM_MIN_PAGES, freePages, givesPagesBack, reclaimFreePages } from './free-pages.ts';
import { createBackup } from './backup.ts';
import { restoreBackup } from './restore.ts';
import { eventually, startOutboundScene } from '../testkit/outbound.ts';
import { request, sqliteOnly } from '../testkit/app.ts';

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-free-pages-'));
  dirs.push(dir);
  return dir;
};
test.after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const fileBytes = (db: Db) => statSync(db.name).size;
const rows = (db: Db) => db.prepare('SELECT id, b FROM t ORDER BY id').all() as Array<{ id: number; b: Buffer }>;

/** `count` rows of 8 KB that do not compress, every other one deleted: free pages scattered through the file. */
function fillAndDeleteHalf(db: Db, count: number): void {
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO t (id, b) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 0; i < count; i++) insert.run(i, randomBytes(8_000));
  })();
  db.prepare('DELETE FROM t WHERE id % 2 = 0').run();
  db.pragma('wal_checkpoint(TRUNCATE)');
}

sqliteOnly(test)('a new database gives its free pages back: the file is cut by what was freed and every row reads the same', async () => {
  const db = openDatabase(freshDir());
  try {
    assert.ok(givesPagesBack(db), 'created in auto_vacuum=INCREMENTAL mode');
    fillAndDeleteHalf(db, 600);
    const kept = rows(db);
    const before = fileBytes(db);
    const { free, pageSize } = freePages(db);
    assert.ok(free >= 600, `${free} free pages after the delete`);

    const reclaimed = await reclaimFreePages(db, new GroupCommit(db));
    assert.is(reclaimed, free);
    assert.is(freePages(db).free, 0);
    // By the pages given back, and by pointer-map pages no longer needed at the end of the file.
    const cut = before - fileBytes(db);
    assert.ok(cut >= free * pageSize && cut <= (free + 2) * pageSize, `${cut} bytes cut for ${free} free pages`);
    assert.equal(rows(db), kept);
    assert.equal(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  } finally {
    db.close();
  }
});

sqliteOnly(test)('a few free pages are left for the next mail to fill', async () => {
  const db = openDatabase(freshDir());
  try {
    fillAndDeleteHalf(db, 200); // about 200 pages freed: under the 1 MiB floor
    const { free, worthReclaiming } = freePages(db);
    assert.ok(free > 100 && free <= RECLAIM_MIN_PAGES, `${free} free pages`);
    assert.not.ok(worthReclaiming);
    const before = fileBytes(db);
    assert.is(await reclaimFreePages(db, new GroupCommit(db)), 0);
    assert.is(freePages(db).free, free);
    assert.is(fileBytes(db), before);
  } finally {
    db.close();
  }
});

sqliteOnly(test)('a database created before keeps its mode and its pages; its backup restores in the mode that gives them back', async () => {
  const dir = freshDir();
  // As an earlier release made it: tables first, so auto_vacuum stays NONE.
  const raw = new Database(databasePath(dir));
  raw.pragma('journal_mode = WAL');
  fillAndDeleteHalf(raw, 600);
  raw.close();

  const db = openDatabase(dir);
  const kept = rows(db);
  const { free } = freePages(db);
  try {
    assert.not.ok(givesPagesBack(db));
    assert.not.ok(freePages(db).worthReclaiming, 'nothing to do in auto_vacuum=NONE');
    assert.is(await reclaimFreePages(db, new GroupCommit(db)), 0);
    assert.is(freePages(db).free, free);
  } finally {
    db.close();
  }

  const file = join(freshDir(), 'box.backup');
  await createBackup({ dataDir: dir, file });
  const restoredDir = freshDir();
  await restoreBackup(file, restoredDir);
  const restored = openDatabase(restoredDir);
  try {
    assert.ok(givesPagesBack(restored), 'the restored database is in auto_vacuum=INCREMENTAL mode');
    assert.is(freePages(restored).free, 0, 'and compact');
    assert.equal(rows(restored), kept);
  } finally {
    restored.close();
  }
});

sqliteOnly(test)('the running box gives back the pages of mail deleted through the API, by itself, and keeps the rest', async () => {
  const s = await startOutboundScene();
  try {
    await s.verifiedDomain('pages.test');
    s.routeTo('dest.test');
    // 100 KB of text that hardly compresses, so that what the deletes free is several times the 1 MiB the box
    // keeps: it looks every 10 s, and may look while the deletes are under way.
    const text = () => Array.from({ length: 2500 }, () => randomBytes(30).toString('base64')).join('\n');
    const sent: string[] = [];
    for (let i = 0; i < 60; i++) {
      const r = await s.send({ from: 'app@pages.test', to: [`user${i}@dest.test`], subject: `letter ${i}`, text: text() });
      assert.is(r.status, 200, JSON.stringify(r.body));
      sent.push(r.body.id);
    }
    await eventually(() => s.sink.messages.length === sent.length, 20_000, 'every email delivered');
    const { db } = s.t.app;
    const [kept, deleted] = [sent.slice(0, 10), sent.slice(10)];
    // The stored bodies and signed bytes of the emails to delete: the pages their rows fill are freed whole.
    const contents = db
      .prepare(`SELECT sum(length(text_body) + coalesce(length(raw), 0)) FROM email_contents WHERE email_id IN (${deleted.map(() => '?').join(',')})`)
      .pluck()
      .get(...deleted) as number;
    db.pragma('wal_checkpoint(TRUNCATE)');
    const before = fileBytes(db);

    // Signing replaced each send's bodies packed, which freed pages too: the box may have given those back already.
    const reclaims = () => s.t.logs.filter((line) => line.includes('free pages given back to the disk')).length;
    const reclaimedBefore = reclaims();
    for (const id of deleted) assert.is((await request(`${s.t.api}/emails/${id}`, { method: 'DELETE', key: s.key })).status, 200);
    await eventually(() => reclaims() > reclaimedBefore && !freePages(db).worthReclaiming, 25_000, 'the reclaim');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const cut = before - fileBytes(db);
    assert.ok(cut > contents * 0.6, `the file is ${cut} bytes shorter after deleting emails whose contents took ${contents}`);
    for (const id of kept) {
      const r = await request(`${s.t.api}/emails/${id}`, { key: s.key });
      assert.is(r.status, 200);
      assert.is(r.body.text.length, 2500 * 41 - 1);
    }
  } finally {
    await s.stop();
  }
});

test.run();
