-- email_contents becomes an ordinary (rowid) table (issue 22: storage near the message size). A row holds an
-- email's bodies and bytes, packed since this release (mail/packing.ts: about 5 KB for a 10 KB message). In a
-- WITHOUT ROWID table a row over ~1 KB keeps only ~500 bytes in its page and ends its overflow chain on a page
-- that is mostly empty, about 2 KB lost per email; a rowid table sizes the part kept in the page so that the
-- overflow pages are full (scripts/bench/storage.ts measured 6,810 bytes per packed row against 5,491).
-- The copy runs once, at start: it needs free space for a second copy of the table and its WAL, and the old
-- table's pages are then free pages that new mail reuses (a backup, made with VACUUM INTO, is compact).
CREATE TABLE email_contents_new (
  email_id  TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  text_body TEXT,                              -- packed (a BLOB) or, as written before packing, TEXT
  html_body TEXT,
  raw       BLOB                               -- out: the signed bytes as transmitted, set once before the first attempt
);
INSERT INTO email_contents_new (email_id, text_body, html_body, raw) SELECT email_id, text_body, html_body, raw FROM email_contents ORDER BY email_id;
DROP TABLE email_contents;
ALTER TABLE email_contents_new RENAME TO email_contents;
