-- Composer drafts (API-SPEC.md 4.6) and their private files, and sends held until their scheduled time.

-- A draft's fields as the API takes them (the body of a send, every field optional), validated when saved.
CREATE TABLE drafts (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  body_json    TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);
CREATE INDEX drafts_newest ON drafts(workspace_id, updated_at DESC, id DESC);

-- A row exists only once its bytes are stored whole and their SHA-256 kept: `available` is never a promise.
CREATE TABLE draft_attachments (
  id           TEXT PRIMARY KEY,
  draft_id     TEXT NOT NULL REFERENCES drafts(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  filename     TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size         INTEGER NOT NULL,
  sha256       TEXT NOT NULL,
  content      BLOB NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX draft_attachments_of ON draft_attachments(draft_id, id);

-- A send accepted with a later `scheduled_at`: stored and metered at once (status `scheduled`), its queue rows
-- made only when it is released at the time. Releasing and canceling both delete this row, so one wins.
CREATE TABLE scheduled_sends (
  email_id      TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id  TEXT NOT NULL,
  scheduled_at  INTEGER NOT NULL,
  recipients    TEXT NOT NULL,                 -- JSON array of envelope recipients
  created_at    INTEGER NOT NULL
);
CREATE INDEX scheduled_sends_due ON scheduled_sends(scheduled_at);

ALTER TABLE emails ADD COLUMN scheduled_at INTEGER;
