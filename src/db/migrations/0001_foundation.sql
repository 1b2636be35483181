-- Workspaces, their owners, browser sessions, API keys and idempotency records.
-- Times are integer milliseconds since the epoch (UTC); the API turns them into ISO 8601.

CREATE TABLE workspaces (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  email         TEXT NOT NULL UNIQUE,       -- lower case: the login name
  password_hash TEXT NOT NULL,              -- scrypt$N$r$p$salt$hash
  created_at    INTEGER NOT NULL
);
CREATE INDEX users_workspace ON users(workspace_id);

-- The cookie carries a random token; only its SHA-256 is kept, so a copy of the database opens no session.
CREATE TABLE sessions (
  id           TEXT PRIMARY KEY,
  token_hash   BLOB NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  revoked_at   INTEGER
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expiry ON sessions(expires_at);

-- Keys are 192 random bits, so a plain SHA-256 is enough to make a stolen table useless.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  prefix       TEXT NOT NULL,
  secret_hash  BLOB NOT NULL UNIQUE,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at   INTEGER
);
CREATE INDEX api_keys_workspace ON api_keys(workspace_id, id);

-- Completed idempotent requests, replayed for 24 h. Requests in flight are tracked in memory by the one
-- serving process; only 2xx outcomes are stored, in the same transaction as the effect they describe.
CREATE TABLE idempotency_keys (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  endpoint     TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status       INTEGER NOT NULL,
  response     TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, endpoint, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_expiry ON idempotency_keys(expires_at);
