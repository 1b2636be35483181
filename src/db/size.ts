// The database's size on disk and its daily samples (migration 0022): the nightly retention job
// records one row per UTC day; doctor reads them to tell how fast the box grows. Queries (query.ts); they
// decide nothing about what the growth means.
import { existsSync, statSync } from 'node:fs';
import { all, dialect, run, value, type Query } from './query.ts';

/** About a year and a month of days: enough for any trend doctor shows, and never more rows than that. */
export const SIZE_SAMPLES_KEPT = 400;

export interface SizeSample {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  bytes: number;
  taken_at: number;
}

/** The database file and its WAL, in bytes: what the data directory spends on the store. */
export function databaseBytes(file: string): number {
  const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
  return size(file) + size(`${file}-wal`);
}

/**
 * Records today's size (a second run on one day replaces the first) and drops samples beyond the newest 400.
 * `file` is SQLite's database file; PostgreSQL tells its database's size itself.
 */
export function* recordDatabaseSize(file: string | undefined, now: number): Query<SizeSample> {
  const bytes = (yield* dialect()) === 'postgres' ? Number(yield* value<number>('SELECT pg_database_size(current_database())')) : databaseBytes(file!);
  const sample = { day: new Date(now).toISOString().slice(0, 10), bytes, taken_at: now };
  yield* run('INSERT INTO db_size_samples (day, bytes, taken_at) VALUES (@day, @bytes, @taken_at) ON CONFLICT (day) DO UPDATE SET bytes = excluded.bytes, taken_at = excluded.taken_at', sample);
  yield* run('DELETE FROM db_size_samples WHERE day NOT IN (SELECT day FROM db_size_samples ORDER BY day DESC LIMIT ?)', SIZE_SAMPLES_KEPT);
  return sample;
}

/** The newest `limit` samples, newest first. */
export const sizeSamples = (limit: number) => all<SizeSample>('SELECT day, bytes, taken_at FROM db_size_samples ORDER BY day DESC LIMIT ?', limit);
