-- The rest of the spam defence around the content filter (0036): the owner's allow and block lists, what the
-- workspace's history says of a sender (reputation), the owner's corrections waiting to be learned, and the
-- verdict each received message was filed with.
--
-- Allow and block lists (GET/POST/DELETE /spam/allow, /spam/block): an entry is an address (`a@b.example`) or a
-- domain (`b.example`, which also covers its subdomains), lower case, IDNs in ASCII. An entry is on one list at
-- most (filter/lists.ts refuses the other with 409).
CREATE TABLE spam_lists (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  list         TEXT NOT NULL CHECK (list IN ('allow', 'block')),
  entry        TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('address', 'domain')),
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, entry)
) WITHOUT ROWID;
-- A page of one list, newest first.
CREATE INDEX spam_lists_page ON spam_lists(workspace_id, list, created_at DESC, entry);

-- Sender reputation (filter/history.ts), per workspace and address (lower case): when the workspace last wrote
-- to it (a transactional send, a reply), when the owner last kept its mail (read it outside Spam, or moved it
-- out of Spam), and when the owner last reported its mail as spam. `domain` is the part after the @, for the
-- weaker domain-wide lean.
CREATE TABLE sender_history (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,
  domain       TEXT NOT NULL,
  wrote_at     INTEGER,
  kept_at      INTEGER,
  reported_at  INTEGER,
  PRIMARY KEY (workspace_id, address)
) WITHOUT ROWID;
CREATE INDEX sender_history_domain ON sender_history(workspace_id, domain);

-- What the workspace wrote to before this table: every recipient of its mail that was not blocked.
INSERT INTO sender_history (workspace_id, address, domain, wrote_at)
  SELECT d.workspace_id, lower(d.recipient), lower(substr(d.recipient, instr(d.recipient, '@') + 1)), max(d.created_at)
  FROM deliveries d WHERE d.state <> 'blocked' AND instr(d.recipient, '@') > 0
  GROUP BY d.workspace_id, lower(d.recipient)
  ON CONFLICT DO NOTHING;
-- ... and whose mail the owner read outside Spam.
INSERT INTO sender_history (workspace_id, address, domain, kept_at)
  SELECT e.workspace_id, lower(e.from_address), lower(substr(e.from_address, instr(e.from_address, '@') + 1)), max(e.read_at)
  FROM emails e WHERE e.direction = 'in' AND e.read_at IS NOT NULL AND e.category IS NOT 'spam' AND instr(e.from_address, '@') > 0
  GROUP BY e.workspace_id, lower(e.from_address)
  ON CONFLICT (workspace_id, address) DO UPDATE SET kept_at = excluded.kept_at;

-- An owner's correction (a move to or from Spam) or a reply, waiting for the trainer (receive/trainer.ts) to
-- read the stored message, tokenize it off the event loop and teach the model in a writer job. Written in the
-- transaction of the change that asked for it, so a restart loses none; the newest wish for an email wins.
CREATE TABLE spam_filter_pending (
  email_id     TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  class        TEXT NOT NULL CHECK (class IN ('spam', 'ham')),
  source       TEXT NOT NULL CHECK (source IN ('owner', 'auto')),
  queued_at    INTEGER NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  next_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX spam_filter_pending_due ON spam_filter_pending(next_at);

-- Drawn anew at every change of a model's counts (filter/store.ts; random, so that a change rolled back and
-- the next one never share a value): a copy of them kept in memory to score with
-- (filter/counts-cache.ts) is used only while its version is the model's.
ALTER TABLE spam_filter_models ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

-- The verdict a received message was filed with: JSON {score, threshold, signals: [{kind, detail, weight}]};
-- null for sent mail and for mail received before this column.
ALTER TABLE emails ADD COLUMN spam TEXT;
