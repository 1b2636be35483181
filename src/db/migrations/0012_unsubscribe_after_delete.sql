-- Unsubscribe links outlive their email: deleting a sent marketing email from the mailbox must not break the
-- links in copies already delivered (RFC 8058 receivers, CAN-SPAM's 30 days). On DELETE, each recipient the
-- email's links name is kept here, under the position its token carries; link-token.ts reads it when the
-- email is gone. Only unsubscribe links: tracking links of a deleted email stop working, by design.
CREATE TABLE unsubscribe_links (
  email_id     TEXT NOT NULL,
  position     INTEGER NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  recipient    TEXT NOT NULL,
  domain       TEXT NOT NULL,
  PRIMARY KEY (email_id, position)
) WITHOUT ROWID;
