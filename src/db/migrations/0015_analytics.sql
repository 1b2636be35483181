-- What GET /analytics ranks (emails/analytics.ts): the outcomes of sent mail per workspace and UTC day, by
-- sending domain and by subject. Counted from the events (joined to their emails) once a day is over, not in
-- addEvent's transaction: measured there, they cost the send path (emails/analytics.ts says how much). An
-- event counts on the day it happens, so a day's counts stop changing once it is over. Days before the
-- longest window (90) are dropped. Nothing to fill here: the first request counts the days it needs.

CREATE TABLE daily_domain_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,                  -- YYYY-MM-DD (UTC)
  domain       TEXT NOT NULL,                  -- the sending domain (emails.domain of sent mail)
  sent         INTEGER NOT NULL DEFAULT 0,
  delivered    INTEGER NOT NULL DEFAULT 0,
  bounced      INTEGER NOT NULL DEFAULT 0,
  blocked      INTEGER NOT NULL DEFAULT 0,
  opened       INTEGER NOT NULL DEFAULT 0,
  clicked      INTEGER NOT NULL DEFAULT 0,
  complained   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day, domain)
) WITHOUT ROWID;

CREATE TABLE daily_subject_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,
  subject      TEXT NOT NULL,                  -- emails.subject of sent mail, as written
  sent         INTEGER NOT NULL DEFAULT 0,
  delivered    INTEGER NOT NULL DEFAULT 0,
  bounced      INTEGER NOT NULL DEFAULT 0,
  blocked      INTEGER NOT NULL DEFAULT 0,
  opened       INTEGER NOT NULL DEFAULT 0,
  clicked      INTEGER NOT NULL DEFAULT 0,
  complained   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day, subject)
) WITHOUT ROWID;

-- The days counted in daily_domain_stats and daily_subject_stats for a workspace: first_day..last_day (UTC),
-- none when last_day < first_day.
CREATE TABLE counted_days (
  workspace_id TEXT PRIMARY KEY,
  first_day    TEXT NOT NULL,
  last_day     TEXT NOT NULL
) WITHOUT ROWID;

-- The finished days of each window summed per subject, so that ranking subjects never groups 90 days of rows
-- (one a subject a day: as many as emails when subjects are personal). A window's rows cover the days of its
-- span; analytics.ts moves the span on as days end (adding the day that ended, taking off the day that left)
-- and ranks these rows through subject_windows_best, merged with the events of the days still open.
CREATE TABLE subject_windows (
  workspace_id TEXT NOT NULL,
  days         INTEGER NOT NULL,               -- the window: 7, 30 or 90
  subject      TEXT NOT NULL,
  sent         INTEGER NOT NULL DEFAULT 0,
  delivered    INTEGER NOT NULL DEFAULT 0,
  bounced      INTEGER NOT NULL DEFAULT 0,
  blocked      INTEGER NOT NULL DEFAULT 0,
  opened       INTEGER NOT NULL DEFAULT 0,
  clicked      INTEGER NOT NULL DEFAULT 0,
  complained   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, days, subject)
) WITHOUT ROWID;
CREATE INDEX subject_windows_best ON subject_windows(workspace_id, days, opened DESC, clicked DESC, delivered DESC, sent DESC, subject);

CREATE TABLE subject_window_spans (
  workspace_id TEXT NOT NULL,
  days         INTEGER NOT NULL,
  first_day    TEXT NOT NULL,                  -- the days summed in subject_windows: first_day..last_day (UTC);
  last_day     TEXT NOT NULL,                  -- none when last_day < first_day
  PRIMARY KEY (workspace_id, days)
) WITHOUT ROWID;
