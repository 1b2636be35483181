// Backup of a whole data directory as one checksummed file (`mailwright backup`, and the scheduled backups of
// `serve`): the file format (pack, unpack, verify), the consistent database snapshot, and the pruning of old
// backups. Putting one back is restore.ts's; whether `serve` runs on a data directory is serving.ts's.
//
// The format, version 1 (readable with head, dd and sha256sum; no dependency):
//   MAILWRIGHT-BACKUP 1 <manifest length in bytes>\n
//   <manifest: UTF-8 JSON {format, version, created, hostname, entries: [{path, type: "file", size, sha256} | {path, type: "dir"}]}>
//   <the bytes of each file entry, in manifest order, back to back>
//   SHA256 <64 hex digits: SHA-256 of every byte above>\n
// The first entry is always `mailwright.db`. Paths are relative, with `/`; modes are not kept (restore makes
// everything private). So `head -c -72 FILE | sha256sum` checks a backup by hand.
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, rmSync } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config/config.ts';
import type { Log } from '../log.ts';
import { databasePath } from './open.ts';
import { quickCheck } from './integrity.ts';
import { RUN_DIR } from './serving.ts';

export const FORMAT_VERSION = 1;
const MAGIC = 'MAILWRIGHT-BACKUP';
const TRAILER_BYTES = 'SHA256 '.length + 64 + 1;
export const DB_ENTRY = 'mailwright.db';
const CHUNK = 1024 * 1024;
const MAX_MANIFEST = 64 * 1024 * 1024;
// Names a backup never carries: the live database files (the snapshot stands for them), serve's markers, and
// what backup and restore leave themselves (temporary files, staging folders, the files a restore moved aside).
export const LIVE_DB = new Set([DB_ENTRY, `${DB_ENTRY}-wal`, `${DB_ENTRY}-shm`, `${DB_ENTRY}-journal`]);
export const TEMP_SUFFIX = '.tmp-backup';
export const ASIDE = '.before-restore-';
export const STAGING = '.restore-';

export type Entry = { path: string; type: 'file'; size: number; sha256: string } | { path: string; type: 'dir' };
export interface Manifest {
  format: 'mailwright-backup';
  version: number;
  created: string;
  hostname: string;
  entries: Entry[];
}

/** The backup cannot be made or used; the message says why and what to do. */
export class BackupError extends Error {
  override name = 'BackupError';
}

// --- Making a backup ------------------------------------------------------------------------------------------

/** Writes the database's snapshot at `dest`, as one self-contained SQLite file in rollback-journal mode. */
export type Snapshot = (dest: string) => Promise<void>;

/**
 * Writes a backup of `dataDir` to `file`: a snapshot of the database taken while the box runs (the data
 * directory's, or what `snapshot` makes: backup-postgres.ts), and every other file under the data directory
 * except `skip` (folders or files, such as the scheduled backups' folder). The file appears complete or not at
 * all (written aside, fsynced, renamed), mode 0600.
 */
export async function createBackup(opts: { dataDir: string; file: string; skip?: string[]; now?: Date; snapshot?: Snapshot }): Promise<{ file: string; bytes: number; entries: Entry[]; skipped: string[] }> {
  const dataDir = resolve(opts.dataDir);
  const file = resolve(opts.file);
  const source = databasePath(dataDir);
  if (!opts.snapshot && !existsSync(source)) throw new BackupError(`there is no database at ${source}: check data_dir (MAILWRIGHT_DATA_DIR)`);
  if (!existsSync(dirname(file))) throw new BackupError(`cannot write ${file}: the folder ${dirname(file)} does not exist`);
  const tag = `${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`;
  // Ends in TEMP_SUFFIX like every file a backup leaves for itself: a backup written into the data directory skips it.
  const snapshot = join(dirname(file), `.${basename(file)}.db.${tag}`);
  const packing = join(dirname(file), `.${basename(file)}.${tag}`);
  try {
    await (opts.snapshot ?? ((dest: string) => snapshotDatabase(source, dest)))(snapshot);
    const check = await quickCheck(snapshot).result;
    if (check.kind !== 'ok') {
      throw new BackupError(`the database ${opts.snapshot ? 'snapshot' : source} fails quick_check (${check.detail}), so a copy of it would not restore: run 'mailwright doctor' and keep your last good backup`);
    }
    const skip = [...(opts.skip ?? []), file].map((p) => resolve(p)).filter((p) => p !== dataDir);
    const { found, skipped } = await listDataDir(dataDir, skip);
    const sources = new Map<string, string>([[DB_ENTRY, snapshot], ...found.filter((f) => f.type === 'file').map((f) => [f.path, join(dataDir, ...f.path.split('/'))] as [string, string])]);
    const entries: Entry[] = [];
    for (const f of [{ path: DB_ENTRY, type: 'file' as const }, ...found]) {
      entries.push(f.type === 'dir' ? { path: f.path, type: 'dir' } : { path: f.path, type: 'file', ...(await digest(sources.get(f.path)!)) });
    }
    const manifest: Manifest = { format: 'mailwright-backup', version: FORMAT_VERSION, created: (opts.now ?? new Date()).toISOString(), hostname: hostname(), entries };
    const bytes = await writePack(packing, manifest, sources);
    await rename(packing, file);
    await syncDir(dirname(file));
    return { file, bytes, entries, skipped };
  } finally {
    for (const leftover of [snapshot, `${snapshot}-journal`, packing]) rmSync(leftover, { force: true });
  }
}

// The driver's own path, handed to the worker: an eval worker resolves modules from the working directory,
// which for scripts/mailwright is wherever the operator stands.
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

// VACUUM INTO reads one committed snapshot in a single read transaction (in WAL mode it blocks no writer), so
// the copy holds exactly what was acknowledged when it began. The online backup API restarts whenever another
// connection writes, which on a busy box (the writer thread commits constantly) may never finish. It runs in a
// worker thread with its own connection, since a large database takes seconds and serve's event loop must not
// wait; plain JavaScript, so the worker starts without tsx. The copy is in auto_vacuum=INCREMENTAL mode, so a
// restore converts an older database (free-pages.ts); the pragma is asked only of a source in another mode (of
// one already in it, it would take the write lock and write the live header).
const SNAPSHOT_WORKER = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.source, { fileMustExist: true, timeout: 30000 });
try { if (db.pragma('auto_vacuum', { simple: true }) !== 2) db.pragma('auto_vacuum = INCREMENTAL'); db.prepare('VACUUM INTO ?').run(workerData.dest); } finally { db.close(); }
`;

function snapshotDatabase(source: string, dest: string): Promise<void> {
  return new Promise((resolveDone, reject) => {
    const worker = new Worker(SNAPSHOT_WORKER, { eval: true, execArgv: [], workerData: { driver: DRIVER, source, dest } });
    worker.once('error', (err) => reject(new BackupError(`could not copy the database ${source}: ${err.message}`)));
    worker.once('exit', (code) => (code === 0 ? resolveDone() : reject(new BackupError(`could not copy the database ${source} (worker exit ${code})`))));
  });
}

/** Every folder and regular file under the data directory that a backup carries, parents before children. */
async function listDataDir(dataDir: string, skip: string[]): Promise<{ found: Array<{ path: string; type: 'file' | 'dir' }>; skipped: string[] }> {
  const found: Array<{ path: string; type: 'file' | 'dir' }> = [];
  const skipped: string[] = [];
  const walk = async (dir: string, prefix: string) => {
    for (const name of (await readdir(dir)).sort()) {
      const abs = join(dir, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      if (rel === DB_ENTRY || neverCarried(rel) || skip.some((s) => abs === s || abs.startsWith(s + sep))) continue;
      let stat;
      try {
        stat = await lstat(abs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      if (stat.isDirectory()) {
        found.push({ path: rel, type: 'dir' });
        await walk(abs, rel);
      } else if (stat.isFile()) found.push({ path: rel, type: 'file' });
      else skipped.push(rel); // a symlink could point anywhere, and a restore on another machine could not honour it
    }
  };
  await walk(dataDir, '');
  return { found, skipped };
}

/**
 * What a path of the data directory is when a backup never carries it, or null. The database is carried, as its
 * snapshot (the first entry); restore refuses a backup that holds any of these (restore.ts).
 */
export function neverCarried(path: string): string | null {
  const parts = path.split('/');
  if (parts.length === 1 && LIVE_DB.has(path) && path !== DB_ENTRY) return "a file of a live database beside the database (a backup's database is one self-contained snapshot)";
  if (parts[0] === RUN_DIR) return "serve's markers of a running process";
  if (parts[0].startsWith(STAGING)) return "a restore's staging folder";
  if (parts.some((p) => p.endsWith(TEMP_SUFFIX))) return "a backup's temporary file";
  if (parts.some((p) => p.includes(ASIDE))) return 'a file an earlier restore moved aside';
  return null;
}

async function digest(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  await eachChunk(path, (chunk) => {
    hash.update(chunk);
    size += chunk.length;
  });
  return { size, sha256: hash.digest('hex') };
}

async function eachChunk(path: string, use: (chunk: Buffer) => Promise<void> | void): Promise<void> {
  const fh = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const { bytesRead } = await fh.read(buffer, 0, CHUNK, null);
      if (bytesRead === 0) return;
      await use(buffer.subarray(0, bytesRead));
    }
  } finally {
    await fh.close();
  }
}

async function writePack(path: string, manifest: Manifest, sources: Map<string, string>): Promise<number> {
  const whole = createHash('sha256');
  const fh = await open(path, 'wx', 0o600);
  let bytes = 0;
  const put = async (chunk: Buffer) => {
    whole.update(chunk);
    await fh.write(chunk);
    bytes += chunk.length;
  };
  try {
    const json = Buffer.from(JSON.stringify(manifest), 'utf8');
    await put(Buffer.from(`${MAGIC} ${FORMAT_VERSION} ${json.length}\n`, 'ascii'));
    await put(json);
    for (const entry of manifest.entries) {
      if (entry.type !== 'file') continue;
      const hash = createHash('sha256');
      let size = 0;
      await eachChunk(sources.get(entry.path)!, async (chunk) => {
        hash.update(chunk);
        size += chunk.length;
        await put(chunk);
      });
      // Files other than the snapshot are read twice (digest, then here): one rewritten meanwhile (a renewed
      // certificate) would no longer match its manifest line, and a restore would refuse the whole backup.
      if (size !== entry.size || hash.digest('hex') !== entry.sha256) throw new BackupError(`${entry.path} changed while it was being backed up; run the backup again`);
    }
    const trailer = Buffer.from(`SHA256 ${whole.digest('hex')}\n`, 'ascii');
    await fh.write(trailer);
    await fh.sync();
    return bytes + trailer.length;
  } finally {
    await fh.close();
  }
}

// --- Reading a backup -----------------------------------------------------------------------------------------

/**
 * Reads a whole backup, checking its header, manifest, every entry's SHA-256 and the SHA-256 of the whole file;
 * with `into`, also writes its entries there (files 0600, folders 0700, each fsynced). Throws BackupError on
 * the first thing that is wrong; what it wrote into `into` by then is the caller's to remove.
 */
export async function readBackup(file: string, into: string | null = null): Promise<Manifest> {
  const fh = await openBackup(file);
  const damaged = (why: string) => damagedBackup(file, why);
  try {
    const { line, json, manifest, dataStart } = await readHead(fh, file);
    const whole = createHash('sha256').update(line).update(json);
    let position = dataStart;
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (const entry of manifest.entries) {
      const target = into && join(into, ...entry.path.split('/'));
      if (entry.type === 'dir') {
        if (target) await mkdir(target, { recursive: true, mode: 0o700 });
        continue;
      }
      if (target) await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      const out = target ? await open(target, 'wx', 0o600) : null;
      try {
        const hash = createHash('sha256');
        for (let left = entry.size; left > 0; ) {
          const { bytesRead } = await fh.read(buffer, 0, Math.min(CHUNK, left), position);
          if (bytesRead === 0) throw damaged('it ends early');
          const chunk = buffer.subarray(0, bytesRead);
          hash.update(chunk);
          whole.update(chunk);
          if (out) await out.write(chunk);
          position += bytesRead;
          left -= bytesRead;
        }
        if (hash.digest('hex') !== entry.sha256) throw damaged(`${entry.path} does not match its SHA-256`);
        await out?.sync();
      } finally {
        await out?.close();
      }
    }
    const trailer = Buffer.alloc(TRAILER_BYTES);
    await fh.read(trailer, 0, TRAILER_BYTES, position);
    const sum = /^SHA256 ([0-9a-f]{64})\n$/.exec(trailer.toString('latin1'));
    if (!sum) throw damaged('no SHA256 line at its end');
    if (sum[1] !== whole.digest('hex')) throw damaged('the file does not match its SHA-256');
    return manifest;
  } finally {
    await fh.close();
  }
}

/** A backup's manifest, checked, and where the bytes of its first entry begin; the entries are not read. */
export async function readManifest(file: string): Promise<{ manifest: Manifest; dataStart: number }> {
  const fh = await openBackup(file);
  try {
    const { manifest, dataStart } = await readHead(fh, file);
    return { manifest, dataStart };
  } finally {
    await fh.close();
  }
}

async function openBackup(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'r');
  } catch (err) {
    throw new BackupError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

const damagedBackup = (file: string, why: string) => new BackupError(`${file} is damaged or not a Mailwright backup (${why}); nothing was restored`);

/** The header line and the manifest as they are in the file, the manifest parsed and checked against the file's size. */
async function readHead(fh: FileHandle, file: string): Promise<{ line: Buffer; json: Buffer; manifest: Manifest; dataStart: number }> {
  const damaged = (why: string) => damagedBackup(file, why);
  const size = (await fh.stat()).size;
  const head = Buffer.alloc(Math.min(64, size));
  await fh.read(head, 0, head.length, 0);
  const newline = head.indexOf(10);
  const m = newline > 0 ? /^MAILWRIGHT-BACKUP (\d+) (\d+)$/.exec(head.subarray(0, newline).toString('latin1')) : null;
  if (!m) throw damaged('no MAILWRIGHT-BACKUP header');
  if (Number(m[1]) !== FORMAT_VERSION) throw new BackupError(`${file} is a version ${m[1]} backup; this release reads version ${FORMAT_VERSION}: restore it with the release that made it`);
  const manifestLength = Number(m[2]);
  if (manifestLength > MAX_MANIFEST || newline + 1 + manifestLength > size) throw damaged('its manifest is cut short');
  const json = Buffer.alloc(manifestLength);
  await fh.read(json, 0, manifestLength, newline + 1);
  const manifest = parseManifest(json, damaged);
  const expected = newline + 1 + manifestLength + manifest.entries.reduce((n, e) => n + (e.type === 'file' ? e.size : 0), 0) + TRAILER_BYTES;
  if (size !== expected) throw damaged(`${size} bytes where its manifest adds up to ${expected}: cut short or altered`);
  return { line: head.subarray(0, newline + 1), json, manifest, dataStart: newline + 1 + manifestLength };
}

function parseManifest(json: Buffer, damaged: (why: string) => BackupError): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(json.toString('utf8'));
  } catch {
    throw damaged('its manifest is not JSON');
  }
  const m = raw as Partial<Manifest>;
  if (m?.format !== 'mailwright-backup' || !Array.isArray(m.entries)) throw damaged('its manifest is not a Mailwright manifest');
  const seen = new Set<string>();
  for (const e of m.entries as Array<Partial<Entry> & { size?: unknown; sha256?: unknown }>) {
    // A backup file may come from anywhere: no entry may point outside the folder it is unpacked into.
    const path = typeof e?.path === 'string' ? e.path : '';
    const segments = path.split('/');
    if (!path || /[\\\0]/.test(path) || segments.some((s) => s === '' || s === '.' || s === '..')) throw damaged(`its manifest names the unsafe path ${JSON.stringify(e?.path)}`);
    if (seen.has(path)) throw damaged(`its manifest names ${path} twice`);
    seen.add(path);
    if (e.type === 'file') {
      if (!Number.isSafeInteger(e.size) || (e.size as number) < 0 || typeof e.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(e.sha256)) throw damaged(`its manifest line for ${path} is malformed`);
    } else if (e.type !== 'dir') throw damaged(`its manifest gives ${path} an unknown type`);
  }
  const first = m.entries[0];
  if (first?.path !== DB_ENTRY || first.type !== 'file') throw damaged(`its first entry is not ${DB_ENTRY}`);
  return m as Manifest;
}

/** Checks a backup file end to end without writing anything. */
export const verifyBackup = (file: string) => readBackup(file, null);

// --- Scheduled backups ----------------------------------------------------------------------------------------

const SCHEDULED = /^mailwright-\d{8}T\d{9}Z\.backup$/;

/**
 * What serve's backup_schedule runs: a backup into backup_dir named by its UTC time, then the oldest of those
 * beyond backup_keep deleted (only after the new one is written, and only files named as this job names them).
 */
export async function scheduledBackup(config: Pick<Config, 'dataDir' | 'backupDir' | 'backupKeep'>, log: Log, now = new Date(), snapshot?: Snapshot): Promise<{ file: string; deleted: string[] }> {
  const started = performance.now();
  await mkdir(config.backupDir, { recursive: true, mode: 0o700 });
  const made = await createBackup({ dataDir: config.dataDir, file: join(config.backupDir, `mailwright-${stamp(now, true)}.backup`), skip: [config.backupDir], now, snapshot });
  const ours = (await readdir(config.backupDir)).filter((n) => SCHEDULED.test(n)).sort();
  const deleted = ours.slice(0, Math.max(0, ours.length - config.backupKeep));
  for (const name of deleted) await rm(join(config.backupDir, name), { force: true });
  log.info('backup written', { file: made.file, bytes: made.bytes, ms: Math.round(performance.now() - started), deleted: deleted.length, skipped: made.skipped.length ? made.skipped : undefined });
  return { file: made.file, deleted };
}

// 20250102T030405Z (with milliseconds, 20250102T030405678Z), so names sort by time.
export function stamp(date: Date, millis = false): string {
  const iso = date.toISOString().replace(/[-:]/g, '');
  return millis ? iso.replace('.', '') : iso.replace(/\.\d+/, '');
}

export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
