-- Emails stored but not yet in the full-text index (emails/search-backlog.ts, issue 22). A send or a received
-- message is acknowledged with a row here instead of its index rows; the writer thread indexes the backlog a
-- moment later, many emails to a transaction: FTS5 writes a new segment at every commit, and a group commit
-- of 6 emails made the index cost about twice what it costs in batches of a hundred. GET /emails indexes what
-- is left before a search. email_id guards a reused search_rowid (one deleted at the top is handed out again).
CREATE TABLE search_backlog (
  search_rowid INTEGER PRIMARY KEY,
  email_id     TEXT NOT NULL
);
