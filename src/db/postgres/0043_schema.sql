-- The schema of a box kept in PostgreSQL, as of SQLite's migration 0043: the same tables, columns and indexes,
-- in PostgreSQL's types (INTEGER as BIGINT, BLOB as BYTEA, a rowid key as an identity column, NOCASE as lower()).
-- Later migrations come in both dialects, under the same number (db/migrate.ts).

CREATE TABLE workspaces (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
, sending_paused_at BIGINT, sending_pause_reason TEXT, sending_resumed_at BIGINT);

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email         TEXT NOT NULL UNIQUE,       -- lower case: the login name
  password_hash TEXT NOT NULL,              -- scrypt$N$r$p$salt$hash
  created_at    BIGINT NOT NULL
);

CREATE INDEX users_workspace ON users(workspace_id);

CREATE TABLE sessions (
  id           TEXT PRIMARY KEY,
  token_hash   BYTEA NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  revoked_at   BIGINT
);

CREATE INDEX sessions_user ON sessions(user_id);

CREATE INDEX sessions_expiry ON sessions(expires_at);

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  prefix       TEXT NOT NULL,
  secret_hash  BYTEA NOT NULL UNIQUE,
  created_at   BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at   BIGINT
, permission TEXT NOT NULL DEFAULT 'full_access' CHECK (permission IN ('full_access', 'sending_access', 'inbox_access')), domain_id TEXT, inbox_ids TEXT);

CREATE INDEX api_keys_workspace ON api_keys(workspace_id, id);

CREATE TABLE idempotency_keys (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  endpoint     TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status       BIGINT NOT NULL,
  response     TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, endpoint, key)
);

CREATE INDEX idempotency_expiry ON idempotency_keys(expires_at);

CREATE TABLE domains (
  id                 TEXT PRIMARY KEY,
  workspace_id       TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name               TEXT NOT NULL,                 -- ASCII (IDNs as punycode), lower case
  return_path        TEXT NOT NULL,                 -- bounces.<name>: MAIL FROM domain, MX to the box
  status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
  dns_state          TEXT,                          -- JSON of the last check: per-record states, issues, checks
  checked_at         BIGINT,
  verified_at        BIGINT,
  failure_streak     BIGINT NOT NULL DEFAULT 0,    -- consecutive periodic checks that found a required record wrong
  marketing          BIGINT NOT NULL DEFAULT 0,
  open_tracking      BIGINT NOT NULL DEFAULT 0,
  click_tracking     BIGINT NOT NULL DEFAULT 0,
  inbound_status     TEXT NOT NULL DEFAULT 'not_configured' CHECK (inbound_status IN ('not_configured', 'dns_pending', 'ready')),
  inbound_checked_at BIGINT,
  inbound_issue      TEXT,
  created_at         BIGINT NOT NULL, local BIGINT NOT NULL DEFAULT 0, unsubscribe_urls TEXT NOT NULL DEFAULT '[]', mta_sts_mode TEXT NOT NULL DEFAULT 'testing' CHECK (mta_sts_mode IN ('testing', 'enforce')),
  UNIQUE (workspace_id, name)
);

CREATE INDEX domains_name ON domains(name);

CREATE TABLE dkim_keys (
  id           TEXT PRIMARY KEY,
  domain_id    TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  selector     TEXT NOT NULL,
  private_key  TEXT NOT NULL,                      -- PEM PKCS#8; never leaves the box
  public_key   TEXT NOT NULL,                      -- base64 DER SubjectPublicKeyInfo: the p= of the record
  created_at   BIGINT NOT NULL,
  retired_at   BIGINT
, signing BIGINT NOT NULL DEFAULT 0, retire_after BIGINT, algorithm TEXT NOT NULL DEFAULT 'rsa' CHECK (algorithm IN ('rsa', 'ed25519')));

CREATE TABLE box_settings (
  key   TEXT PRIMARY KEY,
  value BYTEA NOT NULL
);

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
  created_at     BIGINT NOT NULL
);

CREATE INDEX inboxes_workspace ON inboxes(workspace_id, domain_id, id);

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
  size          BIGINT,
  signed_at     BIGINT,
  is_test       BIGINT NOT NULL DEFAULT 0,
  created_at    BIGINT NOT NULL
, inbox_id TEXT REFERENCES inboxes(id) ON DELETE SET NULL, category TEXT CHECK (category IN ('primary', 'updates', 'spam')), important BIGINT NOT NULL DEFAULT 0, classification TEXT, read_at BIGINT, archived_at BIGINT, authentication TEXT, preview TEXT, search_rowid BIGINT, template_version_id TEXT, scheduled_at BIGINT, trashed_at BIGINT, counted BIGINT NOT NULL DEFAULT 1, sent_by TEXT CHECK (sent_by IN ('dashboard', 'api', 'smtp')), spam TEXT, sent_by_key TEXT);

CREATE INDEX emails_message_id ON emails(workspace_id, message_id);

CREATE INDEX emails_thread ON emails(workspace_id, thread_id, id);

CREATE TABLE email_attachments (
  id           TEXT PRIMARY KEY,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  position     BIGINT NOT NULL,
  filename     TEXT NOT NULL,
  content_type TEXT NOT NULL,
  content_id   TEXT,
  size         BIGINT NOT NULL,
  content      BYTEA NOT NULL
);

CREATE INDEX email_attachments_email ON email_attachments(email_id, position);

CREATE TABLE deliveries (
  id                BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  email_id          TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id      TEXT NOT NULL,
  recipient         TEXT NOT NULL,
  domain            TEXT NOT NULL,             -- the recipient's domain: where it goes
  state             TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'deferred', 'delivered', 'bounced', 'failed', 'blocked')),
  attempts          BIGINT NOT NULL DEFAULT 0,
  next_attempt_at   BIGINT,                   -- null once final
  claimed_at        BIGINT,
  claimed_by        BIGINT,                   -- pid of the claiming process: start-up frees only claims of dead ones
  first_deferred_at BIGINT,
  last_code         BIGINT,
  last_response     TEXT,
  last_mx           TEXT,
  created_at        BIGINT NOT NULL,
  updated_at        BIGINT NOT NULL
, complained_at BIGINT);

CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state IN ('queued', 'deferred');

CREATE INDEX deliveries_claimed ON deliveries(claimed_at) WHERE state = 'sending';

CREATE INDEX deliveries_email ON deliveries(email_id);

CREATE TABLE sender_rules (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,                        -- lower case
  category     TEXT CHECK (category IN ('primary', 'updates', 'spam')),
  important    BIGINT,                              -- null: no opinion
  updated_at   BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, address)
);

CREATE TABLE inbound_reports (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  mail_from    TEXT NOT NULL,
  raw          BYTEA NOT NULL,
  received_at  BIGINT NOT NULL,
  processed_at BIGINT
);

CREATE INDEX inbound_reports_pending ON inbound_reports(received_at) WHERE processed_at IS NULL;

CREATE TABLE forward_confirmations (
  inbox_id     TEXT PRIMARY KEY REFERENCES inboxes(id) ON DELETE CASCADE,
  nonce        TEXT NOT NULL,
  address      TEXT NOT NULL,
  issued_at    BIGINT NOT NULL,
  confirmed_at BIGINT
);

CREATE TABLE correspondents (
  id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,
  name         TEXT NOT NULL DEFAULT '',
  UNIQUE (workspace_id, address, name)
);

-- The `from` and `to` filters find the addresses a value can mean by a case-insensitive substring of the
-- address or a display name (emails/list.ts): trigrams answer LIKE on lower(...) as FTS5's trigram
-- correspondents_search does on SQLite. pg_trgm is a trusted extension: the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX correspondents_trigrams ON correspondents USING gin (lower(address) gin_trgm_ops, lower(name) gin_trgm_ops);

CREATE TABLE suppressions (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email        TEXT NOT NULL,                  -- lower case
  scope        TEXT NOT NULL CHECK (scope IN ('all', 'marketing')),
  reason       TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  origin       TEXT NOT NULL CHECK (origin IN ('recipient', 'api')),
  email_id     TEXT,
  detail       TEXT,
  created_at   BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, email)
);

CREATE TABLE personalised_emails (
  email_id       TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  unsubscribe    BIGINT NOT NULL,             -- 1: the box's List-Unsubscribe and List-Unsubscribe-Post
  open_tracking  BIGINT NOT NULL,
  click_tracking BIGINT NOT NULL,
  links          BIGINT NOT NULL,             -- how many rows email_links has for it
  created_at     BIGINT NOT NULL
);

CREATE TABLE email_links (
  email_id TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  position BIGINT NOT NULL,
  url      TEXT NOT NULL,
  PRIMARY KEY (email_id, position)
);

CREATE TABLE delivery_contents (
  delivery_id BIGINT PRIMARY KEY REFERENCES deliveries(id) ON DELETE CASCADE,
  raw         BYTEA NOT NULL
);

CREATE TABLE labels (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  color        TEXT NOT NULL,
  skip_inbox   BIGINT NOT NULL DEFAULT 0,
  created_at   BIGINT NOT NULL
, total_count BIGINT NOT NULL DEFAULT 0, unread_count BIGINT NOT NULL DEFAULT 0);

CREATE UNIQUE INDEX labels_name ON labels(workspace_id, lower(name));

CREATE TABLE unsubscribe_links (
  email_id     TEXT NOT NULL,
  position     BIGINT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  recipient    TEXT NOT NULL,
  domain       TEXT NOT NULL,
  PRIMARY KEY (email_id, position)
);

CREATE TABLE auth_failures (
  scope   TEXT NOT NULL CHECK (scope IN ('login', 'smtp')),
  ip      TEXT NOT NULL,
  account TEXT NOT NULL,
  at      BIGINT NOT NULL
);

CREATE INDEX auth_failures_ip ON auth_failures(scope, ip, at);

CREATE INDEX auth_failures_account ON auth_failures(scope, account, at);

CREATE TABLE subscriptions (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  plan_key      TEXT NOT NULL,
  message_class TEXT NOT NULL CHECK (message_class IN ('transactional', 'marketing')),
  state         TEXT NOT NULL CHECK (state IN ('active', 'canceled')),
  provider      TEXT NOT NULL,                 -- manual or stripe
  provider_ref  TEXT,                          -- the provider's checkout session or subscription id
  period_start  BIGINT NOT NULL,
  period_end    BIGINT NOT NULL,
  created_at    BIGINT NOT NULL,
  canceled_at   BIGINT
);

CREATE UNIQUE INDEX subscriptions_active ON subscriptions(workspace_id, message_class) WHERE state = 'active';

CREATE TABLE checkout_sessions (
  id                  TEXT PRIMARY KEY,
  workspace_id        TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  plan_key            TEXT NOT NULL,
  provider            TEXT NOT NULL,
  provider_session_id TEXT UNIQUE,
  url                 TEXT NOT NULL,
  state               TEXT NOT NULL CHECK (state IN ('open', 'completed', 'canceled')),
  created_at          BIGINT NOT NULL,
  completed_at        BIGINT
);

CREATE TABLE usage (
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  period           TEXT NOT NULL,              -- YYYY-MM
  recipients       BIGINT NOT NULL DEFAULT 0,
  attachment_bytes BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, period)
);

CREATE TABLE daily_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,                  -- YYYY-MM-DD (UTC)
  sent         BIGINT NOT NULL DEFAULT 0,
  received     BIGINT NOT NULL DEFAULT 0,
  delivered    BIGINT NOT NULL DEFAULT 0,
  bounced      BIGINT NOT NULL DEFAULT 0,
  blocked      BIGINT NOT NULL DEFAULT 0,
  opened       BIGINT NOT NULL DEFAULT 0,
  clicked      BIGINT NOT NULL DEFAULT 0,
  complained   BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day)
);

CREATE TABLE daily_domain_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,                  -- YYYY-MM-DD (UTC)
  domain       TEXT NOT NULL,                  -- the sending domain (emails.domain of sent mail)
  sent         BIGINT NOT NULL DEFAULT 0,
  delivered    BIGINT NOT NULL DEFAULT 0,
  bounced      BIGINT NOT NULL DEFAULT 0,
  blocked      BIGINT NOT NULL DEFAULT 0,
  opened       BIGINT NOT NULL DEFAULT 0,
  clicked      BIGINT NOT NULL DEFAULT 0,
  complained   BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day, domain)
);

CREATE TABLE daily_subject_stats (
  workspace_id TEXT NOT NULL,
  day          TEXT NOT NULL,
  subject      TEXT NOT NULL,                  -- emails.subject of sent mail, as written
  sent         BIGINT NOT NULL DEFAULT 0,
  delivered    BIGINT NOT NULL DEFAULT 0,
  bounced      BIGINT NOT NULL DEFAULT 0,
  blocked      BIGINT NOT NULL DEFAULT 0,
  opened       BIGINT NOT NULL DEFAULT 0,
  clicked      BIGINT NOT NULL DEFAULT 0,
  complained   BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day, subject)
);

CREATE TABLE counted_days (
  workspace_id TEXT PRIMARY KEY,
  first_day    TEXT NOT NULL,
  last_day     TEXT NOT NULL
);

CREATE TABLE subject_windows (
  workspace_id TEXT NOT NULL,
  days         BIGINT NOT NULL,               -- the window: 7, 30 or 90
  subject      TEXT NOT NULL,
  sent         BIGINT NOT NULL DEFAULT 0,
  delivered    BIGINT NOT NULL DEFAULT 0,
  bounced      BIGINT NOT NULL DEFAULT 0,
  blocked      BIGINT NOT NULL DEFAULT 0,
  opened       BIGINT NOT NULL DEFAULT 0,
  clicked      BIGINT NOT NULL DEFAULT 0,
  complained   BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, days, subject)
);

CREATE INDEX subject_windows_best ON subject_windows(workspace_id, days, opened DESC, clicked DESC, delivered DESC, sent DESC, subject);

CREATE TABLE subject_window_spans (
  workspace_id TEXT NOT NULL,
  days         BIGINT NOT NULL,
  first_day    TEXT NOT NULL,                  -- the days summed in subject_windows: first_day..last_day (UTC);

last_day     TEXT NOT NULL,                  -- none when last_day < first_day
  PRIMARY KEY (workspace_id, days)
);

CREATE TABLE label_rules (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label_id         TEXT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
  direction        TEXT CHECK (direction IN ('in', 'out')),          -- null: either
  inbox_id         TEXT REFERENCES inboxes(id) ON DELETE CASCADE,
  from_contains    TEXT,                                             -- lower case
  to_contains      TEXT,
  subject_contains TEXT,
  skip_inbox       BIGINT NOT NULL DEFAULT 0,
  created_at       BIGINT NOT NULL
);

CREATE INDEX label_rules_workspace ON label_rules(workspace_id, created_at);

CREATE TABLE mailbox_counts (
  workspace_id     TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  inbox_unread     BIGINT NOT NULL DEFAULT 0,
  updates_unread   BIGINT NOT NULL DEFAULT 0,
  spam_total       BIGINT NOT NULL DEFAULT 0,
  important_unread BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE label_resorts (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label_id     TEXT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
  rule_id      TEXT REFERENCES label_rules(id) ON DELETE CASCADE,  -- null: the label's skip_inbox (archive what it holds)
  cursor       BIGINT NOT NULL,
  total        BIGINT NOT NULL,
  done         BIGINT NOT NULL DEFAULT 0,
  filed        BIGINT NOT NULL DEFAULT 0,
  skipped      BIGINT NOT NULL DEFAULT 0,                        -- would have been an 11th label
  created_at   BIGINT NOT NULL
);

CREATE TABLE templates (
  id                TEXT PRIMARY KEY,
  workspace_id      TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  key               TEXT NOT NULL,
  name              TEXT NOT NULL,
  lifecycle         TEXT NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active', 'archived')),
  active_version_id TEXT,
  created_at        BIGINT NOT NULL,
  updated_at        BIGINT NOT NULL
);

CREATE UNIQUE INDEX templates_key ON templates(workspace_id, lower(key));

CREATE TABLE template_versions (
  id               TEXT PRIMARY KEY,
  template_id      TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
  workspace_id     TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('draft', 'published')),
  revision         BIGINT NOT NULL DEFAULT 1,
  number           BIGINT,                     -- releases are numbered 1, 2, ... when published
  name             TEXT NOT NULL,
  subject_template TEXT NOT NULL,
  html_template    TEXT NOT NULL,
  text_template    TEXT NOT NULL,
  variables_json   TEXT NOT NULL,
  sample_data_json TEXT NOT NULL,
  message_class    TEXT NOT NULL CHECK (message_class IN ('transactional', 'marketing')),
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL,
  published_at     BIGINT
);

CREATE UNIQUE INDEX template_versions_draft ON template_versions(template_id) WHERE state = 'draft';

CREATE UNIQUE INDEX template_versions_number ON template_versions(template_id, number) WHERE number IS NOT NULL;

CREATE FUNCTION template_release_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'a published template version is immutable' USING ERRCODE = 'restrict_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM templates WHERE id = OLD.template_id) THEN
    RAISE EXCEPTION 'a published template version cannot be deleted' USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN OLD;
END $$;

CREATE TRIGGER template_release_immutable BEFORE UPDATE ON template_versions
  FOR EACH ROW WHEN (OLD.state = 'published') EXECUTE FUNCTION template_release_guard();

CREATE TRIGGER template_release_kept BEFORE DELETE ON template_versions
  FOR EACH ROW WHEN (OLD.state = 'published') EXECUTE FUNCTION template_release_guard();

CREATE INDEX emails_template_version ON emails(template_version_id, created_at) WHERE template_version_id IS NOT NULL;

CREATE TABLE drafts (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  body_json    TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL
);

CREATE INDEX drafts_newest ON drafts(workspace_id, updated_at DESC, id DESC);

CREATE TABLE draft_attachments (
  id           TEXT PRIMARY KEY,
  draft_id     TEXT NOT NULL REFERENCES drafts(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  filename     TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size         BIGINT NOT NULL,
  sha256       TEXT NOT NULL,
  content      BYTEA NOT NULL,
  created_at   BIGINT NOT NULL
);

CREATE INDEX draft_attachments_of ON draft_attachments(draft_id, id);

CREATE TABLE scheduled_sends (
  email_id      TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id  TEXT NOT NULL,
  scheduled_at  BIGINT NOT NULL,
  recipients    TEXT NOT NULL,                 -- JSON array of envelope recipients
  created_at    BIGINT NOT NULL
);

CREATE INDEX scheduled_sends_due ON scheduled_sends(scheduled_at);

CREATE TABLE webhooks (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  url              TEXT NOT NULL,
  events_json      TEXT NOT NULL,               -- ["email.delivered", ...] or ["*"]
  inbox_id         TEXT,
  domain_id        TEXT,
  description      TEXT NOT NULL DEFAULT '',
  enabled          BIGINT NOT NULL DEFAULT 1,
  disabled_reason  TEXT,
  secret           BYTEA NOT NULL,               -- AES-256-GCM under a key derived from the box secret
  previous_secret  BYTEA,                        -- still signs alongside until previous_until
  previous_until   BIGINT,
  failing_since    BIGINT,                     -- the first failure since the last success
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL
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
  attempts        BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  last_status     BIGINT,
  last_response   TEXT,
  last_error      TEXT,
  last_duration_ms BIGINT,
  created_at      BIGINT NOT NULL,
  updated_at      BIGINT NOT NULL
);

CREATE INDEX webhook_deliveries_of ON webhook_deliveries(webhook_id, created_at);

CREATE INDEX webhook_deliveries_order ON webhook_deliveries(webhook_id, email_id, id) WHERE status = 'pending';

CREATE UNIQUE INDEX dkim_keys_signing ON dkim_keys(domain_id) WHERE signing = 1 AND algorithm = 'rsa';

CREATE UNIQUE INDEX dkim_keys_pending ON dkim_keys(domain_id) WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NULL AND algorithm = 'rsa';

CREATE UNIQUE INDEX dkim_keys_ed25519 ON dkim_keys(domain_id) WHERE algorithm = 'ed25519' AND retired_at IS NULL;

CREATE TABLE db_size_samples (
  day      TEXT PRIMARY KEY,
  bytes    BIGINT NOT NULL,
  taken_at BIGINT NOT NULL
);

CREATE TABLE email_contents (
  email_id  TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  text_body BYTEA,
  html_body BYTEA,
  raw       BYTEA                               -- out: the signed bytes as transmitted, set once before the first attempt
, extracted_text TEXT);

CREATE UNIQUE INDEX emails_search_rowid ON emails(search_rowid);

CREATE INDEX emails_newest ON emails(workspace_id, search_rowid);

CREATE INDEX emails_labelled ON emails(workspace_id, search_rowid) WHERE labels_json <> '[]';

CREATE TABLE search_clock (
  minute      BIGINT PRIMARY KEY,   -- created_at / 60000
  first_rowid BIGINT NOT NULL
);

CREATE TABLE search_backlog (
  search_rowid BIGINT PRIMARY KEY,
  email_id     TEXT NOT NULL
);

-- The full-text index, PostgreSQL's own way (SQLite has the FTS5 tables email_search, email_prefixes and
-- correspondents_search instead). One tsvector per email under its search_rowid, written from the words
-- emails/search-index.ts cuts as SQLite's unicode61 tokenizer does (folded: lower case, no diacritics; no
-- stemming, so mail in any language is found by its words), never by a text search configuration's parser.
-- Weights stand for FTS5's columns: A the subject, C the participants, D the attachment names, B the body,
-- laid out in that order with a position left free between them, so a phrase never runs from one into the
-- next and a long body (positions stop at 16383) comes last. Prefixes are tsquery's own (:*), from the GIN
-- index, so no table of prefixes.
CREATE TABLE email_search (
  search_rowid BIGINT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  document     TSVECTOR NOT NULL
);
CREATE INDEX email_search_document ON email_search USING gin (document);

CREATE INDEX emails_inbox ON emails(workspace_id, inbox_id, search_rowid) WHERE inbox_id IS NOT NULL;

CREATE TABLE events (
  seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id           TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  type         TEXT NOT NULL,
  recipient    TEXT,
  data         TEXT NOT NULL DEFAULT '{}',
  created_at   BIGINT NOT NULL
);

CREATE INDEX events_email ON events(email_id);

CREATE INDEX events_workspace ON events(workspace_id, created_at);

CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries(webhook_id, next_attempt_at, id) WHERE status = 'pending';

CREATE INDEX emails_trash ON emails(workspace_id, search_rowid) WHERE trashed_at IS NOT NULL;

CREATE INDEX emails_trash_age ON emails(workspace_id, trashed_at) WHERE trashed_at IS NOT NULL;

CREATE INDEX emails_inbox_view ON emails(workspace_id, search_rowid)
  WHERE direction = 'in' AND archived_at IS NULL AND category IS DISTINCT FROM 'spam' AND trashed_at IS NULL;

CREATE TABLE spam_filter_models (
  id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  workspace_id TEXT NOT NULL UNIQUE REFERENCES workspaces(id) ON DELETE CASCADE,
  spam         BIGINT NOT NULL DEFAULT 0,
  ham          BIGINT NOT NULL DEFAULT 0,
  tokens       BIGINT NOT NULL DEFAULT 0,
  pruned_at    BIGINT
, version BIGINT NOT NULL DEFAULT 0);

CREATE TABLE spam_filter_tokens (
  model_id BIGINT NOT NULL REFERENCES spam_filter_models(id) ON DELETE CASCADE,
  token    BIGINT NOT NULL,
  spam     BIGINT NOT NULL DEFAULT 0,
  ham      BIGINT NOT NULL DEFAULT 0,
  seen_day BIGINT NOT NULL,
  PRIMARY KEY (model_id, token)
);

CREATE TABLE spam_filter_trained (
  email_id   TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  model_id   BIGINT NOT NULL,
  class      TEXT NOT NULL CHECK (class IN ('spam', 'ham')),
  source     TEXT NOT NULL CHECK (source IN ('owner', 'auto')),
  trained_at BIGINT NOT NULL
);

CREATE TABLE spam_lists (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  list         TEXT NOT NULL CHECK (list IN ('allow', 'block')),
  entry        TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('address', 'domain')),
  created_at   BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, entry)
);

CREATE INDEX spam_lists_page ON spam_lists(workspace_id, list, created_at DESC, entry);

CREATE TABLE sender_history (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,
  domain       TEXT NOT NULL,
  wrote_at     BIGINT,
  kept_at      BIGINT,
  reported_at  BIGINT,
  PRIMARY KEY (workspace_id, address)
);

CREATE INDEX sender_history_domain ON sender_history(workspace_id, domain);

CREATE TABLE spam_filter_pending (
  email_id     TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  class        TEXT NOT NULL CHECK (class IN ('spam', 'ham')),
  source       TEXT NOT NULL CHECK (source IN ('owner', 'auto')),
  queued_at    BIGINT NOT NULL,
  attempts     BIGINT NOT NULL DEFAULT 0,
  next_at      BIGINT NOT NULL
);

CREATE INDEX spam_filter_pending_due ON spam_filter_pending(next_at);

CREATE TABLE mta_sts_policies (
  domain      TEXT PRIMARY KEY,               -- the recipient (policy) domain, ASCII lower case
  policy_id   TEXT NOT NULL,                  -- the id= of the TXT record the policy was fetched for
  mode        TEXT NOT NULL CHECK (mode IN ('enforce', 'testing', 'none')),
  mx          TEXT NOT NULL,                  -- JSON array of mx patterns
  max_age     BIGINT NOT NULL,               -- seconds
  policy_text TEXT NOT NULL,                  -- the file as served, for TLS-RPT's policy-string
  fetched_at  BIGINT NOT NULL,               -- ms
  expires_at  BIGINT NOT NULL                -- fetched_at + max_age, ms
);

CREATE INDEX mta_sts_policies_expiry ON mta_sts_policies(expires_at);

CREATE TABLE tls_rpt_counts (
  day           TEXT NOT NULL,                -- UTC YYYY-MM-DD
  policy_domain TEXT NOT NULL,
  policy_type   TEXT NOT NULL CHECK (policy_type IN ('sts', 'tlsa', 'no-policy-found')),
  policy_string TEXT NOT NULL,                -- JSON array of strings
  mx_host       TEXT NOT NULL,                -- JSON array: the policy's mx patterns, or the TLSA's MX host
  result_type   TEXT NOT NULL,                -- '' or an RFC 8460 4.3 result type
  sending_ip    TEXT NOT NULL,
  receiving_mx  TEXT NOT NULL,
  receiving_ip  TEXT NOT NULL,
  reason        TEXT NOT NULL,                -- the last failure's words (additional-information)
  count         BIGINT NOT NULL,
  PRIMARY KEY (day, policy_domain, policy_type, policy_string, mx_host, result_type, sending_ip, receiving_mx, receiving_ip)
);

CREATE TABLE dmarc_reports (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  org_name       TEXT NOT NULL,
  org_email      TEXT NOT NULL,
  report_id      TEXT NOT NULL,
  begin_at       BIGINT NOT NULL,
  end_at         BIGINT NOT NULL,
  policy         TEXT NOT NULL,               -- JSON of policy_published: {domain, adkim, aspf, p, sp, pct}
  messages       BIGINT NOT NULL,            -- the sum of the rows' counts
  failed         BIGINT NOT NULL,            -- messages aligned on neither DKIM nor SPF
  authenticated  BIGINT NOT NULL,            -- 1: the report's own mail passed DMARC (reports are not signed otherwise)
  received_at    BIGINT NOT NULL,
  -- RFC 7489 7.2.1.1: report_id is unique to the reporter: the same report sent twice is kept once.
  UNIQUE (domain_id, org_name, report_id)
);

CREATE INDEX dmarc_reports_domain ON dmarc_reports(domain_id, end_at DESC);

CREATE INDEX dmarc_reports_received ON dmarc_reports(received_at);

CREATE TABLE dmarc_report_rows (
  report_id      TEXT NOT NULL REFERENCES dmarc_reports(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL,
  source_ip      TEXT NOT NULL,
  count          BIGINT NOT NULL,
  disposition    TEXT NOT NULL,               -- none, quarantine, reject
  dkim           TEXT NOT NULL,               -- policy_evaluated: pass or fail (aligned DKIM)
  spf            TEXT NOT NULL,               -- policy_evaluated: pass or fail (aligned SPF)
  header_from    TEXT NOT NULL,
  envelope_from  TEXT,
  auth           TEXT NOT NULL DEFAULT '{}',  -- JSON of auth_results: {dkim: [{domain, selector, result}], spf: [...]}
  reasons        TEXT NOT NULL DEFAULT '[]'   -- JSON of policy_evaluated reasons: [{type, comment}]
);

CREATE INDEX dmarc_report_rows_report ON dmarc_report_rows(report_id);

CREATE INDEX dmarc_report_rows_source ON dmarc_report_rows(domain_id, source_ip);

CREATE TABLE tls_reports (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  org_name       TEXT NOT NULL,
  contact        TEXT NOT NULL,
  report_id      TEXT NOT NULL,
  begin_at       BIGINT NOT NULL,
  end_at         BIGINT NOT NULL,
  successful     BIGINT NOT NULL,
  failed         BIGINT NOT NULL,
  policies       TEXT NOT NULL,               -- JSON: [{type, string, domain, mxHost, successful, failed, failures}]
  authenticated  BIGINT NOT NULL,
  received_at    BIGINT NOT NULL,
  UNIQUE (domain_id, org_name, report_id)
);

CREATE INDEX tls_reports_domain ON tls_reports(domain_id, end_at DESC);

CREATE INDEX tls_reports_received ON tls_reports(received_at);

CREATE TABLE rejected_reports (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  format         TEXT NOT NULL CHECK (format IN ('dmarc', 'tls')),
  mail_from      TEXT NOT NULL,
  header_from    TEXT NOT NULL,
  reason         TEXT NOT NULL,
  bytes          BIGINT NOT NULL,
  received_at    BIGINT NOT NULL
);

CREATE INDEX rejected_reports_domain ON rejected_reports(domain_id, received_at DESC);

CREATE INDEX rejected_reports_received ON rejected_reports(received_at);

CREATE TABLE dmarc_failing_sources (
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source_ip      TEXT NOT NULL,
  first_at       BIGINT NOT NULL,
  PRIMARY KEY (domain_id, source_ip)
);

CREATE INDEX emails_sent_by_key ON emails(sent_by_key, id) WHERE sent_by_key IS NOT NULL;

CREATE TABLE audit_log (
  seq            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id             TEXT NOT NULL UNIQUE,
  workspace_id   TEXT,
  actor_type     TEXT NOT NULL CHECK (actor_type IN ('user', 'key', 'cli', 'system')),
  actor_id       TEXT,
  session_id     TEXT,
  ip             TEXT,
  action         TEXT NOT NULL,
  target_type    TEXT,
  target_id      TEXT,
  target_name    TEXT,
  data           TEXT NOT NULL DEFAULT '{}',
  created_at     BIGINT NOT NULL
);

CREATE INDEX audit_log_workspace ON audit_log(workspace_id, seq);

CREATE INDEX audit_log_created ON audit_log(created_at);

CREATE TABLE domain_events (
  seq            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  id             TEXT NOT NULL UNIQUE,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT,
  inbox_id       TEXT,
  type           TEXT NOT NULL,
  payload        TEXT NOT NULL,
  after_seq      BIGINT NOT NULL DEFAULT 0,
  created_at     BIGINT NOT NULL
);

CREATE INDEX domain_events_created ON domain_events(created_at);

CREATE INDEX domain_events_workspace ON domain_events(workspace_id, seq);

-- The few SQLite functions the box's statements use, as PostgreSQL functions of the same names and meaning, so
-- that a statement is written once for both stores (db/query.ts). Values come back as SQLite gives them where
-- the box reads them: a JSON array's elements as text, a path's value as text.

-- max(a, b) and min(a, b): SQLite's scalar forms (one argument is the aggregate, which PostgreSQL has).
CREATE FUNCTION max(a anycompatible, b anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT greatest(a, b)';
CREATE FUNCTION max(a anycompatible, b anycompatible, c anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT greatest(a, b, c)';
CREATE FUNCTION min(a anycompatible, b anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT least(a, b)';
CREATE FUNCTION min(a anycompatible, b anycompatible, c anycompatible) RETURNS anycompatible LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT least(a, b, c)';

-- json_each(text): a JSON array's elements (key: the index) or an object's members, each value as text.
CREATE FUNCTION json_each(doc text) RETURNS TABLE (key text, value text) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN json_typeof(doc::json) = 'array' THEN (o - 1)::text END, e
  FROM json_array_elements_text(CASE WHEN json_typeof(doc::json) = 'array' THEN doc::json ELSE '[]'::json END) WITH ORDINALITY AS a(e, o)
  UNION ALL
  SELECT k, v FROM json_each_text(CASE WHEN json_typeof(doc::json) = 'object' THEN doc::json ELSE '{}'::json END) AS m(k, v)
$$;

-- json_extract(text, '$.a.b'), and the ->> operator on text with such a path: the value as text (NULL when absent).
CREATE FUNCTION json_extract(doc text, path text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  'SELECT jsonb_path_query_first(doc::jsonb, path::jsonpath) #>> ''{}''';
CREATE OPERATOR ->> (LEFTARG = text, RIGHTARG = text, FUNCTION = json_extract);

-- instr(haystack, needle): the 1-based position, 0 when absent.
CREATE FUNCTION instr(haystack text, needle text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT strpos(haystack, needle)';

-- COLLATE NOCASE: equal and ordered regardless of case (SQLite's folds ASCII only; this folds all letters).
CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- json_array_length(text): the number of elements of a JSON array stored as text (0 for any other value).
CREATE FUNCTION json_array_length(doc text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  'SELECT CASE WHEN json_typeof(doc::json) = ''array'' THEN json_array_length(doc::json) ELSE 0 END';

-- strftime(format, seconds, 'unixepoch'): a Unix time in UTC as text; the format's %Y %m %d %H %M %S only.
CREATE FUNCTION strftime(fmt text, t double precision, modifier text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN modifier = 'unixepoch' THEN
    to_char(to_timestamp(t) AT TIME ZONE 'UTC',
      replace(replace(replace(replace(replace(replace(fmt, '%Y', 'YYYY'), '%m', 'MM'), '%d', 'DD'), '%H', 'HH24'), '%M', 'MI'), '%S', 'SS'))
  END
$$;

-- json_group_array(text): the values of a group as a JSON array of strings, in the order they come, '[]' for
-- none (SQLite's, written as compactly: no space after a comma).
CREATE FUNCTION json_group_array_step(acc text, v text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT CASE WHEN acc IS NULL THEN '' ELSE acc || ',' END || coalesce(to_json(v)::text, 'null')$$;
CREATE FUNCTION json_group_array_final(acc text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT '[' || coalesce(acc, '') || ']'$$;
CREATE AGGREGATE json_group_array(text) (SFUNC = json_group_array_step, STYPE = text, FINALFUNC = json_group_array_final);
-- json_set(text, '$.a.b', value): the document with the value at that path of object members (its JSON type
-- kept: a number stays a number); a parameter as the value is cast to its type, which PostgreSQL cannot guess.
CREATE FUNCTION json_set(doc text, path text, v anyelement) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
  $$SELECT jsonb_set(doc::jsonb, string_to_array(substr(path, 3), '.'), to_jsonb(v))::text$$;
