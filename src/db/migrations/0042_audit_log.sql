-- The audit log: who did what to the box (a key created or revoked, a domain added, a backup taken, ...), with
-- the actor (a user and the session, a key, the CLI, or the box itself), the client's address and the time. A
-- row names its target by kind, id and a name kept as text, so it still reads after the target is deleted;
-- nothing references another table, and box-wide actions (backup, restore, a new workspace) have no workspace.
CREATE TABLE audit_log (
  seq            INTEGER PRIMARY KEY,
  id             TEXT NOT NULL UNIQUE,
  workspace_id   TEXT,
  actor_type     TEXT NOT NULL CHECK (actor_type IN ('user', 'key', 'cli', 'system')),
  actor_id       TEXT,
  session_id     TEXT,
  ip             TEXT,
  action         TEXT NOT NULL,
  target_type    TEXT,
  target_id      TEXT,
  target_name    TEXT,
  data           TEXT NOT NULL DEFAULT '{}',
  created_at     INTEGER NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log(workspace_id, seq);
CREATE INDEX audit_log_created ON audit_log(created_at);

-- Events about a domain, an inbox or a key (domain.created, inbox.deleted, key.revoked, ...) share the table
-- of domain.dmarc_failure: domain_id becomes optional (a key's event has none), inbox_id names an inbox's, and
-- after_seq places the event in the email events' commit order (the newest email event's seq when it was
-- written, under the same write lock), so the live stream can replay both in one order after a reconnect.
CREATE TABLE domain_events_new (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  id             TEXT NOT NULL UNIQUE,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT,
  inbox_id       TEXT,
  type           TEXT NOT NULL,
  payload        TEXT NOT NULL,
  after_seq      INTEGER NOT NULL DEFAULT 0,
  created_at     INTEGER NOT NULL
);
INSERT INTO domain_events_new (seq, id, workspace_id, domain_id, type, payload, after_seq, created_at)
  SELECT seq, id, workspace_id, domain_id, type, payload, (SELECT coalesce(max(seq), 0) FROM events), created_at FROM domain_events ORDER BY seq;
-- The next event comes after every number given, even one whose event was pruned.
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'domain_events_new', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'domain_events_new');
UPDATE sqlite_sequence
  SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'domain_events'), 0))
  WHERE name = 'domain_events_new';
DROP TABLE domain_events;
ALTER TABLE domain_events_new RENAME TO domain_events;
CREATE INDEX domain_events_created ON domain_events(created_at);
CREATE INDEX domain_events_workspace ON domain_events(workspace_id, seq);
