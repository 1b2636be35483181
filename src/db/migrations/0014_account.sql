-- Plans held, usage metered, sending paused, and the daily counters that analytics and reputation read.

-- A workspace holds at most one active plan per message class; the config's default plan is held by every
-- workspace without a row here (account/plans.ts).
CREATE TABLE subscriptions (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  plan_key      TEXT NOT NULL,
  message_class TEXT NOT NULL CHECK (message_class IN ('transactional', 'marketing')),
  state         TEXT NOT NULL CHECK (state IN ('active', 'canceled')),
  provider      TEXT NOT NULL,                 -- manual or stripe
  provider_ref  TEXT,                          -- the provider's checkout session or subscription id
  period_start  INTEGER NOT NULL,
  period_end    INTEGER NOT NULL,
  created_at    INTEGER NOT NULL,
  canceled_at   INTEGER
);
CREATE UNIQUE INDEX subscriptions_active ON subscriptions(workspace_id, message_class) WHERE state = 'active';

-- A checkout under way: the manual provider's confirmation page, or a Stripe Checkout Session.
CREATE TABLE checkout_sessions (
  id                  TEXT PRIMARY KEY,
  workspace_id        TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  plan_key            TEXT NOT NULL,
  provider            TEXT NOT NULL,
  provider_session_id TEXT UNIQUE,
  url                 TEXT NOT NULL,
  state               TEXT NOT NULL CHECK (state IN ('open', 'completed', 'canceled')),
  created_at          INTEGER NOT NULL,
  completed_at        INTEGER
);

-- What a workspace used in a calendar month (UTC): checked and incremented in the transaction that queues.
CREATE TABLE usage (
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  period           TEXT NOT NULL,              -- YYYY-MM
  recipients       INTEGER NOT NULL DEFAULT 0,
  attachment_bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, period)
) WITHOUT ROWID;

ALTER TABLE workspaces ADD COLUMN sending_paused_at INTEGER;
ALTER TABLE workspaces ADD COLUMN sending_pause_reason TEXT;
ALTER TABLE workspaces ADD COLUMN sending_resumed_at INTEGER;

-- One row per workspace and UTC day, counting events as they are added (emails/events.ts addEvent), so that
-- analytics and reputation read at most a few hundred rows whatever the number of emails.
CREATE TABLE daily_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,                  -- YYYY-MM-DD (UTC)
  sent         INTEGER NOT NULL DEFAULT 0,
  received     INTEGER NOT NULL DEFAULT 0,
  delivered    INTEGER NOT NULL DEFAULT 0,
  bounced      INTEGER NOT NULL DEFAULT 0,
  blocked      INTEGER NOT NULL DEFAULT 0,
  opened       INTEGER NOT NULL DEFAULT 0,
  clicked      INTEGER NOT NULL DEFAULT 0,
  complained   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day)
) WITHOUT ROWID;

INSERT INTO daily_stats (workspace_id, day, sent, received, delivered, bounced, blocked, opened, clicked, complained)
SELECT workspace_id, strftime('%Y-%m-%d', created_at / 1000, 'unixepoch'),
       sum(type = 'sent'), sum(type = 'received'), sum(type = 'delivered'), sum(type = 'bounced'), sum(type = 'blocked'),
       sum(type = 'opened'), sum(type = 'clicked'), sum(type = 'complained')
FROM events GROUP BY 1, 2;
