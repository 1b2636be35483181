-- Failed logins and SMTP AUTH attempts, per client address and per account (an email address, or an API
-- key's prefix), for the throttle in account/login-throttle.ts. In the database rather than in memory so
-- that `mailwright user unlock` (another process) can clear them and a restart does not forget them.
CREATE TABLE auth_failures (
  scope   TEXT NOT NULL CHECK (scope IN ('login', 'smtp')),
  ip      TEXT NOT NULL,
  account TEXT NOT NULL,
  at      INTEGER NOT NULL
);
CREATE INDEX auth_failures_ip ON auth_failures(scope, ip, at);
CREATE INDEX auth_failures_account ON auth_failures(scope, account, at);
