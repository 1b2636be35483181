-- With the document kept in its row (0048), a row is still over TOAST's 2 KB threshold, and the toaster moves
-- out of line what it may before it compresses a MAIN column: the workspace id, 30 bytes. Every email then
-- wrote a TOAST row and a TOAST index entry for it, and a search that read it paid four more page reads per
-- match (a rare word's search 12 ms instead of 1.4 at 1,000,000 emails, warm). PLAIN keeps it in the row. The
-- rows written before keep theirs out of line: searches no longer read it (the email's own workspace decides).
ALTER TABLE email_search ALTER COLUMN workspace_id SET STORAGE PLAIN;
