-- Outbound transport security (RFC 8461 MTA-STS, RFC 8460 TLS-RPT): recipient domains' policies as last
-- fetched, and the outcome of the box's own outbound TLS sessions counted per policy domain and UTC day for the
-- daily TLS report.
--
-- One row per recipient domain with a policy: replaced when the `_mta-sts` TXT id changes or the policy
-- expires (RFC 8461 5.1), kept (and used) while a refresh fails and it has not expired.
CREATE TABLE mta_sts_policies (
  domain      TEXT PRIMARY KEY,               -- the recipient (policy) domain, ASCII lower case
  policy_id   TEXT NOT NULL,                  -- the id= of the TXT record the policy was fetched for
  mode        TEXT NOT NULL CHECK (mode IN ('enforce', 'testing', 'none')),
  mx          TEXT NOT NULL,                  -- JSON array of mx patterns
  max_age     INTEGER NOT NULL,               -- seconds
  policy_text TEXT NOT NULL,                  -- the file as served, for TLS-RPT's policy-string
  fetched_at  INTEGER NOT NULL,               -- ms
  expires_at  INTEGER NOT NULL                -- fetched_at + max_age, ms
);
CREATE INDEX mta_sts_policies_expiry ON mta_sts_policies(expires_at);

-- Sessions counted (RFC 8460 4.4): a row per day, policy domain, policy, result and receiving MX; result_type
-- '' is a successful session. Deleted once the day's report went out, and after a few days anyway.
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
  count         INTEGER NOT NULL,
  PRIMARY KEY (day, policy_domain, policy_type, policy_string, mx_host, result_type, sending_ip, receiving_mx, receiving_ip)
);
