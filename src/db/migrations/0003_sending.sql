-- Mail (sent now, received later), the outbound queue (one row per recipient) and delivery events.

-- Secrets of the box itself (e.g. the key that authenticates VERP addresses); part of every backup.
CREATE TABLE box_settings (
  key   TEXT PRIMARY KEY,
  value BLOB NOT NULL
);

CREATE TABLE emails (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  direction     TEXT NOT NULL CHECK (direction IN ('out', 'in')),
  status        TEXT NOT NULL,
  domain_id     TEXT REFERENCES domains(id) ON DELETE SET NULL,
  domain        TEXT,                          -- sending domain (out) or receiving domain (in)
  message_id    TEXT NOT NULL,                 -- RFC 5322 Message-ID without angle brackets
  thread_id     TEXT NOT NULL,                 -- em_ id of the thread's first message
  in_reply_to   TEXT,
  refs          TEXT NOT NULL DEFAULT '[]',    -- JSON array of Message-IDs (References)
  from_address  TEXT NOT NULL,
  from_name     TEXT,
  to_json       TEXT NOT NULL DEFAULT '[]',    -- JSON [{name, address}]
  cc_json       TEXT NOT NULL DEFAULT '[]',
  bcc_json      TEXT NOT NULL DEFAULT '[]',
  reply_to_json TEXT NOT NULL DEFAULT '[]',
  subject       TEXT NOT NULL DEFAULT '',
  headers_json  TEXT NOT NULL DEFAULT '{}',
  tags_json     TEXT NOT NULL DEFAULT '[]',
  labels_json   TEXT NOT NULL DEFAULT '[]',
  message_class TEXT NOT NULL DEFAULT 'transactional' CHECK (message_class IN ('transactional', 'marketing')),
  template_id   TEXT,
  envelope_from TEXT,
  size          INTEGER,
  signed_at     INTEGER,
  is_test       INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL
);
CREATE INDEX emails_workspace ON emails(workspace_id, id);
CREATE INDEX emails_message_id ON emails(workspace_id, message_id);
CREATE INDEX emails_thread ON emails(workspace_id, thread_id, id);

-- The large parts of an email, apart from the row that status and flag updates rewrite (SQLite rewrites a
-- whole row: with the bodies in it, every status change wrote ~24 KiB of WAL).
CREATE TABLE email_contents (
  email_id  TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  text_body TEXT,
  html_body TEXT,
  raw       BLOB                               -- out: the signed bytes as transmitted, set once before the first attempt
) WITHOUT ROWID;

CREATE TABLE email_attachments (
  id           TEXT PRIMARY KEY,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  position     INTEGER NOT NULL,
  filename     TEXT NOT NULL,
  content_type TEXT NOT NULL,
  content_id   TEXT,
  size         INTEGER NOT NULL,
  content      BLOB NOT NULL
);
CREATE INDEX email_attachments_email ON email_attachments(email_id, position);

-- The queue: a recipient is claimed by setting state 'sending' in one UPDATE, so two workers never both
-- take it; a crash leaves it 'sending', and start-up (or an expired claim) puts it back.
CREATE TABLE deliveries (
  id                INTEGER PRIMARY KEY,
  email_id          TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id      TEXT NOT NULL,
  recipient         TEXT NOT NULL,
  domain            TEXT NOT NULL,             -- the recipient's domain: where it goes
  state             TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'deferred', 'delivered', 'bounced', 'failed', 'blocked')),
  attempts          INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   INTEGER,                   -- null once final
  claimed_at        INTEGER,
  claimed_by        INTEGER,                   -- pid of the claiming process: start-up frees only claims of dead ones
  first_deferred_at INTEGER,
  last_code         INTEGER,
  last_response     TEXT,
  last_mx           TEXT,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state IN ('queued', 'deferred');
CREATE INDEX deliveries_claimed ON deliveries(claimed_at) WHERE state = 'sending';
CREATE INDEX deliveries_email ON deliveries(email_id);

CREATE TABLE events (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  type         TEXT NOT NULL,
  recipient    TEXT,
  data         TEXT NOT NULL DEFAULT '{}',
  created_at   INTEGER NOT NULL
);
CREATE INDEX events_email ON events(email_id, id);
CREATE INDEX events_workspace ON events(workspace_id, created_at);
