-- Received mail: the mailbox columns of an email, what the owner taught the box about senders, the full-text
-- index, and the reports (DSNs, complaints) that arrive at the box's own bounce addresses.

ALTER TABLE emails ADD COLUMN inbox_id TEXT REFERENCES inboxes(id) ON DELETE SET NULL;
ALTER TABLE emails ADD COLUMN category TEXT CHECK (category IN ('primary', 'updates', 'spam'));   -- received mail only
ALTER TABLE emails ADD COLUMN important INTEGER NOT NULL DEFAULT 0;
ALTER TABLE emails ADD COLUMN classification TEXT;                -- why it has its category, for people
ALTER TABLE emails ADD COLUMN read_at INTEGER;
ALTER TABLE emails ADD COLUMN archived_at INTEGER;
ALTER TABLE emails ADD COLUMN authentication TEXT;                -- JSON {spf, dkim, dmarc, arc} verdicts (received)
ALTER TABLE emails ADD COLUMN preview TEXT;                       -- the first words of the text, for lists
-- The email's row in email_search: time-ordered (arrival milliseconds * 1024 + a counter), so "newest first"
-- is a walk down the FTS rowid, never a sort of every match (performance-baseline.md, choice 1).
ALTER TABLE emails ADD COLUMN search_rowid INTEGER;
CREATE UNIQUE INDEX emails_search_rowid ON emails(search_rowid);
CREATE INDEX emails_inbox ON emails(workspace_id, inbox_id, id);

-- One FTS5 index over what people search for. Contentless: the text already lives in emails and
-- email_contents; contentless_delete lets DELETE remove an email's row. Prefix queries of 3 characters use
-- the prefix index; shorter prefixes are not offered.
CREATE VIRTUAL TABLE email_search USING fts5(
  subject, body, participants, attachments,
  content = '', contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2', prefix = '3'
);

-- What the owner taught the box about a sender (PATCH /emails/:id with category or important, unless
-- learn is false). Classification reads it for every new message from that address.
CREATE TABLE sender_rules (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,                        -- lower case
  category     TEXT CHECK (category IN ('primary', 'updates', 'spam')),
  important    INTEGER,                              -- null: no opinion
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, address)
) WITHOUT ROWID;

-- Mail to a VERP bounce address: delivery status notifications and complaint reports about an email the box
-- sent, kept durably as received; processing them (bounced/complained, suppressions) reads this table.
CREATE TABLE inbound_reports (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  mail_from    TEXT NOT NULL,
  raw          BLOB NOT NULL,
  received_at  INTEGER NOT NULL,
  processed_at INTEGER
);
CREATE INDEX inbound_reports_pending ON inbound_reports(received_at) WHERE processed_at IS NULL;
