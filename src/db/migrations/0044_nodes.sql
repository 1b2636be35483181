-- The processes serving this box: one on SQLite, any number sharing PostgreSQL. A node registers when it
-- starts and says it is alive every few seconds (cluster/nodes.ts); the queue's claims name the node that holds
-- them, so the claims of a node that stopped are taken back by the others (send/claims.ts).
CREATE TABLE nodes (
  id          INTEGER PRIMARY KEY,
  host        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  started_at  INTEGER NOT NULL,
  seen_at     INTEGER NOT NULL,
  -- How far the node's clock is ahead of the database's, at its last heartbeat (0 on SQLite: one clock).
  skew_ms     INTEGER NOT NULL DEFAULT 0
);

-- Periodic jobs the box runs once whichever node's timer fires first (cluster/once.ts): when each last began.
CREATE TABLE job_runs (
  name        TEXT PRIMARY KEY,
  started_at  INTEGER NOT NULL,
  node_id     INTEGER
);

-- Claims made before nodes named a process id; none of those processes runs now: the first sweep puts them back.
UPDATE deliveries SET claimed_by = NULL WHERE state = 'sending';
