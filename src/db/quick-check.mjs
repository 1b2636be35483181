// The child process of integrity.ts: PRAGMA quick_check on a read-only connection to the database named by
// its argument, then one JSON line on stdout. It reads and prints only. Plain JavaScript, so it starts
// without tsx; a process of its own, not a worker thread, so that it can be killed mid-check.
import Database from 'better-sqlite3';

const MAX_PROBLEMS = 20;
let answer;
try {
  const db = new Database(process.argv[2], { readonly: true, fileMustExist: true, timeout: 10_000 });
  const lines = db.pragma(`quick_check(${MAX_PROBLEMS})`).map((row) => String(row.quick_check));
  db.close();
  answer = lines.length === 1 && lines[0] === 'ok' ? { ok: true } : { ok: false, problems: lines };
} catch (err) {
  answer = { ok: false, error: { code: typeof err?.code === 'string' ? err.code : null, message: String(err?.message ?? err) } };
}
process.stdout.write(`${JSON.stringify(answer)}\n`);
