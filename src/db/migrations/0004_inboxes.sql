-- Inboxes: the addresses the box receives mail for. An address is unique across the box (RCPT routing must
-- find exactly one inbox); deleting an inbox keeps its messages.
CREATE TABLE inboxes (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  local_part     TEXT NOT NULL,
  address        TEXT NOT NULL UNIQUE,               -- lower case
  name           TEXT NOT NULL DEFAULT '',
  status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  forward_to     TEXT,
  forward_status TEXT NOT NULL DEFAULT 'off' CHECK (forward_status IN ('off', 'pending', 'active')),
  created_at     INTEGER NOT NULL
);
CREATE INDEX inboxes_workspace ON inboxes(workspace_id, domain_id, id);
