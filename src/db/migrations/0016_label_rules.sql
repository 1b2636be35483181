-- Filing rules of labels, the counts GET /labels shows (kept in the transaction of every change to an email,
-- emails/counts.ts), and the work of applying labels to mail already stored (labels/resort.ts).

ALTER TABLE labels ADD COLUMN total_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE labels ADD COLUMN unread_count INTEGER NOT NULL DEFAULT 0;   -- received and unread

-- A rule files new mail into its label when every condition set matches (API-SPEC.md 4.3 rule 3).
CREATE TABLE label_rules (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label_id         TEXT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
  direction        TEXT CHECK (direction IN ('in', 'out')),          -- null: either
  inbox_id         TEXT REFERENCES inboxes(id) ON DELETE CASCADE,
  from_contains    TEXT,                                             -- lower case
  to_contains      TEXT,
  subject_contains TEXT,
  skip_inbox       INTEGER NOT NULL DEFAULT 0,
  created_at       INTEGER NOT NULL
);
CREATE INDEX label_rules_workspace ON label_rules(workspace_id, created_at);

-- The mailbox summary of a workspace (GET /labels `mailbox`).
CREATE TABLE mailbox_counts (
  workspace_id     TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  inbox_unread     INTEGER NOT NULL DEFAULT 0,
  updates_unread   INTEGER NOT NULL DEFAULT 0,
  spam_total       INTEGER NOT NULL DEFAULT 0,
  important_unread INTEGER NOT NULL DEFAULT 0
);

-- Labels (or a rule) being applied to retained mail, newest first, a bounded batch at a time; `cursor` is the
-- search_rowid below which the walk goes on, so a restart resumes where it was.
CREATE TABLE label_resorts (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label_id     TEXT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
  rule_id      TEXT REFERENCES label_rules(id) ON DELETE CASCADE,  -- null: the label's skip_inbox (archive what it holds)
  cursor       INTEGER NOT NULL,
  total        INTEGER NOT NULL,
  done         INTEGER NOT NULL DEFAULT 0,
  filed        INTEGER NOT NULL DEFAULT 0,
  skipped      INTEGER NOT NULL DEFAULT 0,                        -- would have been an 11th label
  created_at   INTEGER NOT NULL
);

-- One pass over the labelled mail, not one per label.
CREATE TEMP TABLE label_counts AS
  SELECT j.value AS id, count(*) AS total, sum(e.direction = 'in' AND e.read_at IS NULL) AS unread
  FROM emails e, json_each(e.labels_json) j WHERE e.labels_json <> '[]' GROUP BY j.value;
UPDATE labels SET total_count = c.total, unread_count = c.unread FROM temp.label_counts c WHERE c.id = labels.id;
DROP TABLE temp.label_counts;

INSERT INTO mailbox_counts (workspace_id, inbox_unread, updates_unread, spam_total, important_unread)
SELECT w.id,
  (SELECT count(*) FROM emails e WHERE e.workspace_id = w.id AND e.direction = 'in' AND e.archived_at IS NULL AND e.category IS NOT 'spam' AND e.read_at IS NULL),
  (SELECT count(*) FROM emails e WHERE e.workspace_id = w.id AND e.direction = 'in' AND e.archived_at IS NULL AND e.category = 'updates' AND e.read_at IS NULL),
  (SELECT count(*) FROM emails e WHERE e.workspace_id = w.id AND e.direction = 'in' AND e.category = 'spam'),
  (SELECT count(*) FROM emails e WHERE e.workspace_id = w.id AND e.direction = 'in' AND e.archived_at IS NULL AND e.category IS NOT 'spam' AND e.important = 1 AND e.read_at IS NULL)
FROM workspaces w;
