-- A search newest first is either the GIN index's matches sorted or the newest emails checked one by one, and the
-- planner picks by their costs. Documents (3-4 KB: every word with its positions) were kept out of line in TOAST,
-- which the planner does not count: the table looked 50 times smaller than it is, the walk cheap, and a word in a
-- few hundred emails was looked for in tens of thousands of them, a TOAST read each (hundreds of ms at 200,000
-- emails instead of 5). STORAGE MAIN keeps a document in its row: the walk costs what it reads, the planner
-- weighs it truly, and both ways read one page where they read five. The rows are copied once so that the
-- documents written before move into them.
-- With true costs, 1,000 as the statistics target (10,000 words with their frequencies) is enough for the
-- choice, and plans in about 2 ms where 10,000 took 6.
CREATE TABLE email_search_inline (
  search_rowid BIGINT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  document     TSVECTOR NOT NULL
);
ALTER TABLE email_search_inline ALTER COLUMN document SET STORAGE MAIN;
ALTER TABLE email_search_inline ALTER COLUMN document SET STATISTICS 1000;
INSERT INTO email_search_inline SELECT search_rowid, workspace_id, document FROM email_search ORDER BY search_rowid;
DROP TABLE email_search;
ALTER TABLE email_search_inline RENAME TO email_search;
ALTER INDEX email_search_inline_pkey RENAME TO email_search_pkey;
ALTER TABLE email_search RENAME CONSTRAINT email_search_inline_workspace_id_fkey TO email_search_workspace_id_fkey;
CREATE INDEX email_search_document ON email_search USING gin (document);
ANALYZE email_search;
