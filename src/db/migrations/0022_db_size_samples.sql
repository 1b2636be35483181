-- The database's size once a day (issue 21): main file plus WAL in bytes, recorded by the nightly retention
-- job (db/size.ts) so that `mailwright doctor` can tell how fast the box grows and when free space runs out.
-- One row per UTC day; the job keeps the newest 400.
CREATE TABLE db_size_samples (
  day      TEXT PRIMARY KEY,
  bytes    INTEGER NOT NULL,
  taken_at INTEGER NOT NULL
) WITHOUT ROWID;
