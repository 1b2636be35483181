-- Two of emails' indexes cost every email a B-tree entry and every group commit a page of the WAL for nothing
-- (issue 22). emails_workspace (workspace_id, id) was the mailbox's order until 0007: every query by workspace
-- now walks emails_newest (workspace_id, search_rowid), by id the primary key. emails_inbox held a row for each
-- sent email too, whose inbox_id is NULL and never asked for (GET /emails?inbox_id= matches with =, which this
-- partial index answers). Sent mail then takes about 120 bytes less a message, received mail 75.
DROP INDEX emails_workspace;
DROP INDEX emails_inbox;
CREATE INDEX emails_inbox ON emails(workspace_id, inbox_id, search_rowid) WHERE inbox_id IS NOT NULL;
