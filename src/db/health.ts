// Whether the database can still be trusted: the first corruption or I/O error SQLite reports, wherever it
// surfaces (an HTTP request, a group commit, the writer thread, the start-up check), turns /healthz to 503
// until a restart, and is logged once with what to do. It records and tells; it stops nothing.
import type { Log } from '../log.ts';

/** What a storage error means for the box: its database is damaged, its disk is full, or PostgreSQL is out of reach. */
export type StorageFault = 'damaged' | 'full' | 'unreachable';

// SQLite's own messages for these codes, for an error that lost its code on the way (worker-pool.ts carries it).
const BY_MESSAGE: Array<[RegExp, string]> = [
  [/^database or disk is full$/, 'SQLITE_FULL'],
  [/^database disk image is malformed$/, 'SQLITE_CORRUPT'],
  [/^file is not a database$/, 'SQLITE_NOTADB'],
  [/^disk I\/O error$/, 'SQLITE_IOERR'],
];

/** The SQLite result code (SQLITE_FULL, SQLITE_CORRUPT_INDEX...) or errno code (ENOSPC) of an error, if any. */
export function errorCode(err: unknown): string | null {
  const { code, name, message } = (err ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string') return code;
  if (name === 'SqliteError' && typeof message === 'string') return BY_MESSAGE.find(([re]) => re.test(message))?.[1] ?? null;
  return null;
}

export function storageFault(err: unknown): StorageFault | null {
  const code = errorCode(err);
  if (code === null) return null;
  if (/^SQLITE_(CORRUPT|NOTADB|IOERR)/.test(code)) return 'damaged';
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return 'full';
  if (code === 'STORE_UNREACHABLE') return 'unreachable'; // db/postgres.ts StoreUnreachable
  return null;
}

/** What the operator should do about a damaged database; every message about one ends with it. */
export const damagedAdvice = (file: string) =>
  `Mailwright will not serve from ${file}. Run 'mailwright doctor' for details, then stop mailwright and restore ` +
  `the latest backup of the data directory; keep the damaged file aside for inspection.`;

export class StoreHealth {
  /** Why the database cannot be trusted (the first error SQLite reported), or null while it can. */
  corrupt: string | null = null;

  constructor(
    private readonly file: string,
    private readonly log: Log,
  ) {}

  /** Looks at any error: corruption or an I/O error from SQLite makes the box unhealthy. */
  observe(err: unknown): void {
    if (this.corrupt === null && storageFault(err) === 'damaged') this.report(`${errorCode(err)}: ${(err as Error).message}`);
  }

  /** Records that the database is damaged (once; later reports are ignored). */
  report(reason: string): void {
    if (this.corrupt !== null) return;
    this.corrupt = reason;
    this.log.error('the database is damaged; /healthz now answers 503', { file: this.file, reason, action: damagedAdvice(this.file) });
  }
}
