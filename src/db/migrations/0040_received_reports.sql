-- Reports that receivers send about a workspace's domains, received by mail at dmarc-reports@ and tls-reports@
-- on the domain's return path (feedback/aggregate-reports.ts): DMARC aggregate reports (RFC 7489 7.2) with
-- their rows, TLS reports (RFC 8460) with their policies, and what could not be read, kept aside with the
-- reason. All pruned after report_retention_days (400 by default). Domain events (domain.dmarc_failure) have
-- their own sequence: `events` is tied to an email.
CREATE TABLE dmarc_reports (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  org_name       TEXT NOT NULL,
  org_email      TEXT NOT NULL,
  report_id      TEXT NOT NULL,
  begin_at       INTEGER NOT NULL,
  end_at         INTEGER NOT NULL,
  policy         TEXT NOT NULL,               -- JSON of policy_published: {domain, adkim, aspf, p, sp, pct}
  messages       INTEGER NOT NULL,            -- the sum of the rows' counts
  failed         INTEGER NOT NULL,            -- messages aligned on neither DKIM nor SPF
  authenticated  INTEGER NOT NULL,            -- 1: the report's own mail passed DMARC (reports are not signed otherwise)
  received_at    INTEGER NOT NULL,
  -- RFC 7489 7.2.1.1: report_id is unique to the reporter: the same report sent twice is kept once.
  UNIQUE (domain_id, org_name, report_id)
);
CREATE INDEX dmarc_reports_domain ON dmarc_reports(domain_id, end_at DESC);
CREATE INDEX dmarc_reports_received ON dmarc_reports(received_at);

CREATE TABLE dmarc_report_rows (
  report_id      TEXT NOT NULL REFERENCES dmarc_reports(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL,
  source_ip      TEXT NOT NULL,
  count          INTEGER NOT NULL,
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
  begin_at       INTEGER NOT NULL,
  end_at         INTEGER NOT NULL,
  successful     INTEGER NOT NULL,
  failed         INTEGER NOT NULL,
  policies       TEXT NOT NULL,               -- JSON: [{type, string, domain, mxHost, successful, failed, failures}]
  authenticated  INTEGER NOT NULL,
  received_at    INTEGER NOT NULL,
  UNIQUE (domain_id, org_name, report_id)
);
CREATE INDEX tls_reports_domain ON tls_reports(domain_id, end_at DESC);
CREATE INDEX tls_reports_received ON tls_reports(received_at);

-- What arrived at a report address and could not be read: when, from whom, why, how big. Not the bytes.
CREATE TABLE rejected_reports (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  format         TEXT NOT NULL CHECK (format IN ('dmarc', 'tls')),
  mail_from      TEXT NOT NULL,
  header_from    TEXT NOT NULL,
  reason         TEXT NOT NULL,
  bytes          INTEGER NOT NULL,
  received_at    INTEGER NOT NULL
);
CREATE INDEX rejected_reports_domain ON rejected_reports(domain_id, received_at DESC);
CREATE INDEX rejected_reports_received ON rejected_reports(received_at);

-- Sources already announced by domain.dmarc_failure, so each is announced once per domain.
CREATE TABLE dmarc_failing_sources (
  domain_id      TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source_ip      TEXT NOT NULL,
  first_at       INTEGER NOT NULL,
  PRIMARY KEY (domain_id, source_ip)
) WITHOUT ROWID;

-- Events about a domain rather than an email; webhook deliveries are added beside them (webhook_deliveries with
-- no email_id and the payload made at once), and the live stream sends them as they are committed.
CREATE TABLE domain_events (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  id             TEXT NOT NULL UNIQUE,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  domain_id      TEXT NOT NULL,
  type           TEXT NOT NULL,
  payload        TEXT NOT NULL,
  created_at     INTEGER NOT NULL
);
CREATE INDEX domain_events_created ON domain_events(created_at);
