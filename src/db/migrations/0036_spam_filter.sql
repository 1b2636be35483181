-- The statistical content filter (src/filter/): one model per workspace, learned only from that workspace's mail.
--
-- A workspace's model: how many messages it learned of each class, and how many token rows it holds (kept up to
-- date by training and pruning, so the size bound is checked without counting). `id` is the small key every
-- token row carries instead of the workspace's text id.
CREATE TABLE spam_filter_models (
  id           INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL UNIQUE REFERENCES workspaces(id) ON DELETE CASCADE,
  spam         INTEGER NOT NULL DEFAULT 0,
  ham          INTEGER NOT NULL DEFAULT 0,
  tokens       INTEGER NOT NULL DEFAULT 0,
  pruned_at    INTEGER
);

-- Per token: in how many learned spam (ham) messages it was. `token` is a 47-bit hash of the token's text
-- (filter/store.ts tokenHash: 6 bytes in a record); `seen_day` the day (since 1970) it was last learned, for
-- pruning tokens that are both rare and stale. A row whose counts both reach 0 is deleted.
CREATE TABLE spam_filter_tokens (
  model_id INTEGER NOT NULL REFERENCES spam_filter_models(id) ON DELETE CASCADE,
  token    INTEGER NOT NULL,
  spam     INTEGER NOT NULL DEFAULT 0,
  ham      INTEGER NOT NULL DEFAULT 0,
  seen_day INTEGER NOT NULL,
  PRIMARY KEY (model_id, token)
) WITHOUT ROWID;

-- Which emails a model learned, and as what, so that an owner's correction moves a message from one class to
-- the other instead of counting it twice, and an owner's word is never overridden by the box's own training.
-- Keyed by the email alone (ids are unique across workspaces): deleting an email drops its row, so the table
-- never outgrows the mailbox; what the model learned from the email stays.
CREATE TABLE spam_filter_trained (
  email_id   TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  model_id   INTEGER NOT NULL,
  class      TEXT NOT NULL CHECK (class IN ('spam', 'ham')),
  source     TEXT NOT NULL CHECK (source IN ('owner', 'auto')),
  trained_at INTEGER NOT NULL
) WITHOUT ROWID;
