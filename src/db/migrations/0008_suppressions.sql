-- Addresses a workspace no longer sends to. One entry per address: `scope` 'all' blocks every send
-- (hard bounce, complaint, the owner's own entry), 'marketing' only marketing mail (an unsubscribe).
-- `origin` says who put it there ('recipient': a bounce, complaint or unsubscribe; 'api': the owner),
-- `email_id` the message that caused it, when there is one.
CREATE TABLE suppressions (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email        TEXT NOT NULL,                  -- lower case
  scope        TEXT NOT NULL CHECK (scope IN ('all', 'marketing')),
  reason       TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  origin       TEXT NOT NULL CHECK (origin IN ('recipient', 'api')),
  email_id     TEXT,
  detail       TEXT,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, email)
) WITHOUT ROWID;
