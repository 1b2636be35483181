// The database check at start: SQLite's quick_check in a child process (quick-check.mjs), waited for within a
// bound. better-sqlite3 is built without the progress callback, so a check cannot be interrupted in-process:
// in a worker thread it would also hold process.exit() until it finished (13.9 s measured on a cold 1 GB
// database), while a child process is killed at once. It changes nothing in the database.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Log } from '../log.ts';
import { damagedAdvice, storageFault, type StoreHealth } from './health.ts';

const CHECKER = fileURLToPath(new URL('./quick-check.mjs', import.meta.url));

/**
 * How long start-up waits for the check. quick_check of a database of received mail with its search index:
 * 205 MB (10,000 messages) 0.17 s from the page cache, 0.92 s cold; 2.0 GB (100,000) 1.4-1.9 s warm, 8.2-9.2 s
 * cold. Smaller boxes are checked before they serve; larger ones start, and go unhealthy if the check then
 * finds damage.
 */
export const START_CHECK_WAIT_MS = 5000;

export type CheckResult =
  | { kind: 'ok'; ms: number }
  /** quick_check found damage (or the file is not a database): `detail` is what SQLite said. */
  | { kind: 'damaged'; detail: string }
  /** The check could not run (killed, or SQLite refused to open for another reason). */
  | { kind: 'unchecked'; detail: string };

export interface QuickCheck {
  result: Promise<CheckResult>;
  /** Ends the check if it is still running (its result is then `unchecked`). */
  stop(): void;
}

/** Starts quick_check of the database file on a read-only connection of its own. */
export function quickCheck(file: string): QuickCheck {
  const started = performance.now();
  const child = spawn(process.execPath, [CHECKER, file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
  const result = new Promise<CheckResult>((resolve) => {
    child.once('error', (e) => resolve({ kind: 'unchecked', detail: `the check could not start: ${e.message}` }));
    child.once('close', (code, signal) => {
      let answer: { ok: boolean; problems?: string[]; error?: { code: string | null; message: string } };
      try {
        answer = JSON.parse(out);
      } catch {
        resolve({ kind: 'unchecked', detail: `the check ended without an answer (${signal ?? `exit code ${code}`}) ${err.trim()}`.trim() });
        return;
      }
      if (answer.ok) resolve({ kind: 'ok', ms: Math.round(performance.now() - started) });
      else if (answer.problems) resolve({ kind: 'damaged', detail: answer.problems.join('; ') });
      else if (storageFault(answer.error) === 'damaged') resolve({ kind: 'damaged', detail: `${answer.error!.code}: ${answer.error!.message}` });
      else resolve({ kind: 'unchecked', detail: `${answer.error?.code ?? 'error'}: ${answer.error?.message}` });
    });
  });
  return { result, stop: () => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')) };
}

/**
 * Checks the database at start, waiting for the answer up to `waitMs`. Returns what to tell the operator when
 * the check found damage in time (the caller refuses to start); a check still running goes on, and damage
 * it finds later turns `health` unhealthy. stop() ends a check still running (at shutdown).
 */
export async function checkAtStart(file: string, opts: { waitMs: number; health: StoreHealth; log: Log }): Promise<{ damaged: string | null; stop: () => void }> {
  const { health, log } = opts;
  const check = quickCheck(file);
  let stopped = false;
  const report = (r: CheckResult, late: boolean) => {
    if (stopped) return;
    if (r.kind === 'ok') log.info('database checked', { file, quickCheckMs: r.ms });
    else if (r.kind === 'unchecked') log.warn('the database could not be checked', { file, detail: r.detail });
    else if (late) health.report(`quick_check: ${r.detail}`);
  };
  let timer: NodeJS.Timeout | undefined;
  const early = await Promise.race([check.result, new Promise<null>((resolve) => (timer = setTimeout(resolve, opts.waitMs, null)))]);
  clearTimeout(timer);
  if (early) {
    report(early, false);
    return { damaged: early.kind === 'damaged' ? `the database ${file} is damaged (quick_check: ${early.detail}). ${damagedAdvice(file)}` : null, stop: () => {} };
  }
  log.warn('the database check is still running; starting meanwhile, and damage it finds will turn /healthz to 503', { file, waitedMs: opts.waitMs });
  void check.result.then((r) => report(r, true));
  return {
    damaged: null,
    stop: () => {
      stopped = true;
      check.stop();
    },
  };
}

/**
 * For `mailwright doctor`: what is wrong with the database, as lines to print, or null when quick_check finds
 * it sound (or there is no database yet). It waits for the whole check.
 */
export async function databaseProblems(file: string): Promise<string[] | null> {
  if (!existsSync(file)) return null;
  const r = await quickCheck(file).result;
  if (r.kind === 'ok') return null;
  if (r.kind === 'unchecked') return [`Database ${file}: could not be checked (${r.detail}).`];
  return [
    `Database ${file}: DAMAGED (quick_check: ${r.detail}).`,
    '  Mailwright will not serve from it. Stop mailwright, keep the damaged file aside, and restore the latest',
    '  backup of the data directory. Mail acknowledged after that backup was taken is not in it.',
  ];
}
