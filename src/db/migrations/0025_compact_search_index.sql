-- The full-text index in about half the space (issue 22: storage near the message size). Two changes, both
-- measured by scripts/bench/storage.ts on the same texts:
--   * Dense rowids. An email's search_rowid was its arrival in ms * 1024, so every doclist entry stored the gap
--     to the previous one in 3-4 bytes once mail arrived minutes apart; it is now one past the newest
--     (emails/search-index.ts nextSearchRowid), a gap of a byte or two. Where a creation time lies in rowid
--     order moves to search_clock, which list.ts reads to bound a walk by `after` and `before`.
--   * No prefix index. FTS5's prefix = '3' kept every position of every 3-letter prefix again, about half
--     of email_search. email_prefixes holds the same first 3 letters with rowids only (detail = none), which
--     is all a prefix search needs to walk; phrases still use email_search's positions (detail = full).
-- Existing rows are renumbered in rowid order and indexed again. Their bodies are stored packed, which SQL
-- cannot unpack, so the words come from the old index itself: fts5vocab's `instance` table lists every token
-- of every row with its column and position, and joined in position order they index to the same tokens at
-- the same positions. This runs once, at the first start of this release. Measured on 300,000 emails of the
-- search benchmark (scripts/bench/migration.ts): about 35 s and 1.2 GB of temporary files (SQLite's temp
-- directory: SQLITE_TMPDIR or TMPDIR, else /var/tmp) per 100,000 emails, for the one sort of every token.

CREATE TEMP TABLE renumbered (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
INSERT INTO temp.renumbered (old, new)
  SELECT search_rowid, row_number() OVER (ORDER BY search_rowid) FROM emails WHERE search_rowid IS NOT NULL;

-- One pass over the old index, grouped by row: one sort of every token (the old index lists them term by term),
-- and a text row per email to index from, a fraction of the size of a table of tokens. The role tokens of the
-- participants ('f' or 't' and the hex of an address) are no words to search for, so no prefixes of theirs.
CREATE VIRTUAL TABLE temp.old_words USING fts5vocab(main, email_search, instance);
CREATE TEMP TABLE texts (old INTEGER PRIMARY KEY, subject TEXT, body TEXT, participants TEXT, attachments TEXT, prefixes TEXT);
INSERT INTO temp.texts (old, subject, body, participants, attachments, prefixes)
  SELECT doc,
    coalesce(group_concat(term, ' ' ORDER BY offset) FILTER (WHERE col = 'subject'), ''),
    coalesce(group_concat(term, ' ' ORDER BY offset) FILTER (WHERE col = 'body'), ''),
    coalesce(group_concat(term, ' ' ORDER BY offset) FILTER (WHERE col = 'participants'), ''),
    coalesce(group_concat(term, ' ' ORDER BY offset) FILTER (WHERE col = 'attachments'), ''),
    coalesce(group_concat(DISTINCT substr(term, 1, 3)) FILTER (WHERE length(term) >= 3
      AND NOT (col = 'participants' AND length(term) >= 9 AND substr(term, 1, 1) IN ('f', 't') AND substr(term, 2) NOT GLOB '*[^0-9a-f]*')), '')
  FROM temp.old_words GROUP BY doc;
DROP TABLE temp.old_words;
DROP TABLE email_search;

CREATE VIRTUAL TABLE email_search USING fts5(
  subject, body, participants, attachments,
  content = '', contentless_delete = 1,
  tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE email_prefixes USING fts5(
  prefixes,
  content = '', contentless_delete = 1, detail = none,
  tokenize = 'unicode61 remove_diacritics 2'
);

INSERT INTO email_search (rowid, subject, body, participants, attachments)
  SELECT r.new, t.subject, t.body, t.participants, t.attachments FROM temp.texts t JOIN temp.renumbered r ON r.old = t.old ORDER BY t.old;
INSERT INTO email_prefixes (rowid, prefixes)
  SELECT r.new, t.prefixes FROM temp.texts t JOIN temp.renumbered r ON r.old = t.old WHERE t.prefixes <> '' ORDER BY t.old;
DROP TABLE temp.texts;
INSERT INTO email_search (email_search) VALUES ('optimize');
INSERT INTO email_prefixes (email_prefixes) VALUES ('optimize');

-- The indexes that hold search_rowid are rebuilt rather than updated row by row (and a new number can equal
-- an old one of a row not yet updated, which the unique index would refuse).
DROP INDEX emails_search_rowid;
DROP INDEX emails_newest;
DROP INDEX emails_inbox_view;
DROP INDEX emails_labelled;
DROP INDEX emails_inbox;
UPDATE emails SET search_rowid = (SELECT r.new FROM temp.renumbered r WHERE r.old = emails.search_rowid) WHERE search_rowid IS NOT NULL;
CREATE UNIQUE INDEX emails_search_rowid ON emails(search_rowid);
CREATE INDEX emails_newest ON emails(workspace_id, search_rowid);
CREATE INDEX emails_inbox_view ON emails(workspace_id, search_rowid)
  WHERE direction = 'in' AND archived_at IS NULL AND category IS NOT 'spam';
CREATE INDEX emails_labelled ON emails(workspace_id, search_rowid) WHERE labels_json <> '[]';
CREATE INDEX emails_inbox ON emails(workspace_id, inbox_id, search_rowid);

-- A label being applied to older mail walks on below its cursor, a search_rowid: the same place, renumbered.
UPDATE label_resorts SET cursor = coalesce(
  (SELECT min(r.new) FROM temp.renumbered r WHERE r.old >= label_resorts.cursor),
  (SELECT coalesce(max(r.new), 0) + 1 FROM temp.renumbered r));
DROP TABLE temp.renumbered;

-- The first rowid written once the newest created_at so far reached each minute (search-index.ts keeps it).
CREATE TABLE search_clock (
  minute      INTEGER PRIMARY KEY,   -- created_at / 60000
  first_rowid INTEGER NOT NULL
);
INSERT INTO search_clock (minute, first_rowid)
  SELECT minute, min(search_rowid) FROM (
    SELECT search_rowid, max(created_at) OVER (ORDER BY search_rowid) / 60000 AS minute FROM emails WHERE search_rowid IS NOT NULL
  ) GROUP BY minute;
