-- The Trash (DESIGN.md "trash"): an email moved there keeps every row it has and gets trashed_at (ms); lists,
-- counts and the mailbox summary leave it out unless asked (emails/list.ts trashTerm, emails/counts.ts), and
-- the nightly retention job deletes it for good after trash_days. Mail outside the Trash costs no index entry
-- more: both new indexes are partial, holding trashed mail only.
ALTER TABLE emails ADD COLUMN trashed_at INTEGER;

-- GET /emails?trashed=true, newest first like every list.
CREATE INDEX emails_trash ON emails(workspace_id, search_rowid) WHERE trashed_at IS NOT NULL;
-- Emptying the Trash and the retention job's purge, oldest trashed first.
CREATE INDEX emails_trash_age ON emails(workspace_id, trashed_at) WHERE trashed_at IS NOT NULL;

-- The Inbox view leaves trashed mail out of its index too, so a page of the Inbox never walks over what was
-- just moved to the Trash. list.ts writes this WHERE exactly so (with the spam and trash terms).
DROP INDEX emails_inbox_view;
CREATE INDEX emails_inbox_view ON emails(workspace_id, search_rowid)
  WHERE direction = 'in' AND archived_at IS NULL AND category IS NOT 'spam' AND trashed_at IS NULL;
