-- Sending domains, their DKIM keys, the last DNS check and inbound (MX) setup.

CREATE TABLE domains (
  id                 TEXT PRIMARY KEY,
  workspace_id       TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name               TEXT NOT NULL,                 -- ASCII (IDNs as punycode), lower case
  return_path        TEXT NOT NULL,                 -- bounces.<name>: MAIL FROM domain, MX to the box
  status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
  dns_state          TEXT,                          -- JSON of the last check: per-record states, issues, checks
  checked_at         INTEGER,
  verified_at        INTEGER,
  failure_streak     INTEGER NOT NULL DEFAULT 0,    -- consecutive periodic checks that found a required record wrong
  marketing          INTEGER NOT NULL DEFAULT 0,
  open_tracking      INTEGER NOT NULL DEFAULT 0,
  click_tracking     INTEGER NOT NULL DEFAULT 0,
  inbound_status     TEXT NOT NULL DEFAULT 'not_configured' CHECK (inbound_status IN ('not_configured', 'dns_pending', 'ready')),
  inbound_checked_at INTEGER,
  inbound_issue      TEXT,
  created_at         INTEGER NOT NULL,
  UNIQUE (workspace_id, name)
);
CREATE INDEX domains_name ON domains(name);

-- A domain has one active key; retired keys stay (and their selectors stay published) until no queued
-- message signed with them remains.
CREATE TABLE dkim_keys (
  id           TEXT PRIMARY KEY,
  domain_id    TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  selector     TEXT NOT NULL,
  private_key  TEXT NOT NULL,                      -- PEM PKCS#8; never leaves the box
  public_key   TEXT NOT NULL,                      -- base64 DER SubjectPublicKeyInfo: the p= of the record
  created_at   INTEGER NOT NULL,
  retired_at   INTEGER
);
CREATE UNIQUE INDEX dkim_keys_active ON dkim_keys(domain_id) WHERE retired_at IS NULL;
