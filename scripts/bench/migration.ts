// Times the pending migrations on a copy of a data directory built by an older release (0025 on a
// large mailbox). Usage: node --import tsx scripts/bench/migration.ts <data dir> [<scratch dir>]
// The directory is copied to the scratch dir first (default: beside it) and the copy migrated in a child
// process, so the original can be reused. Reported: wall time, the child's CPU time (user + system, which the
// machine's load does not change much), its peak RSS (VmHWM), and the peak
// extra disk, sampled every 50 ms: growth of the database file, its -wal, and SQLite's temporary files
// (unlinked files the child holds open, read through /proc/<pid>/fd).
import { spawn } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === '--child') {
  const { openDatabase } = await import('../../src/db/open.ts');
  const { listMigrations, migrate } = await import('../../src/db/migrate.ts');
  const db = openDatabase(process.argv[3]!);
  const t0 = performance.now();
  // BENCH_MIGRATIONS_DIR: another set of migration files, to compare a version of one with this one.
  const dir = process.env.BENCH_MIGRATIONS_DIR;
  const applied = migrate(db, Date.now(), dir ? listMigrations(dir) : undefined);
  const t1 = performance.now();
  db.close(); // checkpoints the WAL into the file
  const t2 = performance.now();
  console.log(JSON.stringify({ applied, migrateMs: Math.round(t1 - t0), closeMs: Math.round(t2 - t1) }));
  process.exit(0);
}

const source = resolve(process.argv[2] ?? '');
if (!existsSync(join(source, 'mailwright.db'))) throw new Error(`no mailwright.db in ${source}`);
const copy = resolve(process.argv[3] ?? `${source}-migrated`);
rmSync(copy, { recursive: true, force: true });
cpSync(source, copy, { recursive: true });
const dbFile = join(copy, 'mailwright.db');
const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
const before = size(dbFile);

const emails = Number(
  (await import('better-sqlite3')).default(dbFile, { readonly: true }).prepare('SELECT count(*) FROM emails').pluck().get(),
);

const t0 = performance.now();
const child = spawn(process.execPath, ['--import', 'tsx', self, '--child', copy], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (d) => (out += d));
let peakExtra = 0;
let peakTemp = 0;
let peakWal = 0;
let hwm = 0;
let cpuTicks = 0;
const sample = () => {
  const pid = child.pid;
  if (!pid) return;
  let temp = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (link.includes('(deleted)') || /etilqs_/.test(link)) temp += statSync(`/proc/${pid}/fd/${fd}`).size;
      } catch {}
    }
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    hwm = Math.max(hwm, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    // utime and stime, fields 14 and 15 of /proc/<pid>/stat (after the parenthesised name).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    cpuTicks = Number(fields[11]) + Number(fields[12]);
  } catch {
    return;
  }
  const wal = size(`${dbFile}-wal`);
  peakWal = Math.max(peakWal, wal);
  peakTemp = Math.max(peakTemp, temp);
  peakExtra = Math.max(peakExtra, size(dbFile) - before + wal + temp);
};
const timer = setInterval(sample, 50);
const code: number = await new Promise((r) => child.on('exit', (c) => r(c ?? 1)));
clearInterval(timer);
const wallMs = performance.now() - t0;
if (code !== 0) throw new Error(`migration child exited ${code}`);
const result = JSON.parse(out.trim().split('\n').at(-1)!);
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
const after = size(dbFile);
console.log(`emails: ${emails.toLocaleString('en')}; applied: ${result.applied.join(', ') || 'none'}`);
console.log(`migrate: ${(result.migrateMs / 1000).toFixed(1)} s, close (checkpoint): ${(result.closeMs / 1000).toFixed(1)} s, process wall: ${(wallMs / 1000).toFixed(1)} s`);
console.log(`per 100k emails: ${((result.migrateMs + result.closeMs) / 1000 / (emails / 1e5)).toFixed(1)} s`);
console.log(`CPU (user + system, clock ticks of 10 ms, to the last sample): ${(cpuTicks / 100).toFixed(1)} s`);
console.log(`peak RSS (VmHWM): ${mib(hwm * 1024)}`);
console.log(`database: ${mib(before)} -> ${mib(after)}`);
console.log(`peak extra disk: ${mib(peakExtra)} (temp files ${mib(peakTemp)}, WAL ${mib(peakWal)}); per 100k emails ${mib(peakExtra / (emails / 1e5))}`);
