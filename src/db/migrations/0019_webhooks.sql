-- Webhooks (issue 19): endpoints, the durable outbox of deliveries, and the feed the live event stream reads.
-- The outbox and the feed are filled by a trigger on events, so every event anyone adds, in any thread or
-- process, gets its deliveries in the same transaction: a crash can never lose a callback.

CREATE TABLE webhooks (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  url              TEXT NOT NULL,
  events_json      TEXT NOT NULL,               -- ["email.delivered", ...] or ["*"]
  inbox_id         TEXT,
  domain_id        TEXT,
  description      TEXT NOT NULL DEFAULT '',
  enabled          INTEGER NOT NULL DEFAULT 1,
  disabled_reason  TEXT,
  secret           BLOB NOT NULL,               -- AES-256-GCM under a key derived from the box secret
  previous_secret  BLOB,                        -- still signs alongside until previous_until
  previous_until   INTEGER,
  failing_since    INTEGER,                     -- the first failure since the last success
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE INDEX webhooks_workspace ON webhooks(workspace_id, id);

CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,             -- also the Standard Webhooks `webhook-id`: the same on every retry
  webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  workspace_id    TEXT NOT NULL,
  event_id        TEXT,                         -- null for webhook.test
  email_id        TEXT,
  type            TEXT NOT NULL,                -- email.delivered, webhook.test, ...
  payload         TEXT,                         -- the body, made at the first attempt and then kept
  status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_status     INTEGER,
  last_response   TEXT,
  last_error      TEXT,
  last_duration_ms INTEGER,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_of ON webhook_deliveries(webhook_id, created_at);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries(webhook_id, email_id, id) WHERE status = 'pending';

-- A sequence in commit order for Server-Sent Events ids (event ids are made in two threads and may not be).
CREATE TABLE event_feed (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id     TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX event_feed_workspace ON event_feed(workspace_id, seq);

CREATE TRIGGER events_outbox AFTER INSERT ON events
BEGIN
  INSERT INTO event_feed (event_id, workspace_id, created_at) VALUES (NEW.id, NEW.workspace_id, NEW.created_at);
  INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, email_id, type, next_attempt_at, created_at, updated_at)
  SELECT 'whmsg_' || substr(NEW.id, 5) || '_' || substr(w.id, 4), w.id, NEW.workspace_id, NEW.id, NEW.email_id, 'email.' || NEW.type, NEW.created_at, NEW.created_at, NEW.created_at
  FROM webhooks w
  WHERE w.workspace_id = NEW.workspace_id AND w.enabled = 1
    AND EXISTS (SELECT 1 FROM json_each(w.events_json) j WHERE j.value IN ('*', 'email.' || NEW.type))
    AND (w.inbox_id IS NULL OR w.inbox_id = (SELECT e.inbox_id FROM emails e WHERE e.id = NEW.email_id))
    AND (w.domain_id IS NULL OR w.domain_id = (SELECT e.domain_id FROM emails e WHERE e.id = NEW.email_id));
END;
