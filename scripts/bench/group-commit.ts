// Benchmark: durable (synchronous=FULL) writes of 10 KB rows from many concurrent writers, one commit
// per write against the group commit that the SMTP and send paths use. Prints writes/s, fsyncs (commits)
// and the ratio, measured in the same run on the same disk.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { GroupCommit } from '../../src/db/group-commit.ts';

const WRITERS = Number(process.env.BENCH_WRITERS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PAYLOAD = Buffer.alloc(10 * 1024, 'x');

interface Result {
  mode: string;
  writesPerSecond: number;
  commits: number;
  writesPerCommit: number;
}

function setup(): { db: Db; dir: string; insert: () => void } {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'mw-bench-'));
  const db = openDatabase(dir);
  db.exec('CREATE TABLE m (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
  const stmt = db.prepare('INSERT INTO m (body) VALUES (?)');
  return { db, dir, insert: () => void stmt.run(PAYLOAD) };
}

// Each writer waits for its next message to arrive (0-4 ms, spread like network arrivals), then writes
// durably and waits for the write to be on disk before taking the next.
async function drive(write: () => Promise<void>): Promise<number> {
  let writes = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (performance.now() < until) {
        await new Promise((r) => setTimeout(r, Math.random() * 4));
        await write();
        writes++;
      }
    }),
  );
  return writes;
}

async function perWrite(): Promise<Result> {
  const { db, dir, insert } = setup();
  const tx = db.transaction(insert);
  const writes = await drive(async () => tx());
  db.close();
  rmSync(dir, { recursive: true });
  return { mode: 'commit per write', writesPerSecond: writes / SECONDS, commits: writes, writesPerCommit: 1 };
}

async function grouped(windowMs: number): Promise<Result> {
  const { db, dir, insert } = setup();
  const gc = new GroupCommit(db, { windowMs });
  const writes = await drive(() => gc.run(insert));
  db.close();
  rmSync(dir, { recursive: true });
  return { mode: `group commit, ${windowMs} ms window`, writesPerSecond: writes / SECONDS, commits: gc.stats.commits, writesPerCommit: gc.stats.jobs / gc.stats.commits };
}

export async function benchGroupCommit(): Promise<Result[]> {
  const results = [await perWrite(), await grouped(2), await grouped(0)];
  const base = results[0].writesPerSecond;
  console.log(`\ngroup commit: ${WRITERS} concurrent writers, 10 KB rows, synchronous=FULL, ${SECONDS} s each`);
  console.log('| mode | writes/s | commits (fsyncs) | writes per commit | vs commit per write |');
  console.log('|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.mode} | ${Math.round(r.writesPerSecond)} | ${r.commits} | ${r.writesPerCommit.toFixed(1)} | ${(r.writesPerSecond / base).toFixed(2)}x |`);
  }
  return results;
}
