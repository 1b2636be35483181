-- Events carry the live stream's sequence themselves (issue 22: storage near the message size, and fewer
-- B-trees in a send's commit). Until now an event was a row in `events` with three indexes (its id's UNIQUE,
-- events_email on (email_id, id), events_workspace) and a row in `event_feed` with one more, kept a day for
-- the stream's commit order: about 500 bytes an event, 2,000 for a tracked email to two recipients.
--
-- `seq` is the table's INTEGER PRIMARY KEY and AUTOINCREMENT: assigned under the write lock, so in commit order
-- (the feed's promise), and never given again after the newest events are deleted with their email, so a
-- client's Last-Event-ID cannot stand for a later event. The id stays the event's public name and is found
-- through its email (events_email holds (email_id, seq)); its 80 random bits make it unique without an index.
--
-- Events still in the feed keep the feed's number, the id a stream client holds; older ones take the negative
-- numbers before them, in their order. Each copy is written in seq order, so the new table's pages are full. An event whose email is gone (possible only in a file written with
-- foreign keys off) is left behind rather than keep the box from starting. The copy runs once, at start (about
-- 4 s per 1,000,000 events): it needs free space for a second copy of the table and its WAL, and the old
-- table's pages become free pages, given back to the disk (db/free-pages.ts) or filled by new mail.
CREATE TABLE events_new (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  id           TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  email_id     TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  type         TEXT NOT NULL,
  recipient    TEXT,
  data         TEXT NOT NULL DEFAULT '{}',
  created_at   INTEGER NOT NULL
);
CREATE INDEX event_feed_event ON event_feed(event_id);
INSERT INTO events_new (seq, id, workspace_id, email_id, type, recipient, data, created_at)
  SELECT f.seq, e.id, e.workspace_id, e.email_id, e.type, e.recipient, e.data, e.created_at
  FROM events e JOIN event_feed f ON f.event_id = e.id
  WHERE EXISTS (SELECT 1 FROM emails m WHERE m.id = e.email_id)
  ORDER BY f.seq;
INSERT INTO events_new (seq, id, workspace_id, email_id, type, recipient, data, created_at)
  SELECT -row_number() OVER (ORDER BY e.rowid DESC), e.id, e.workspace_id, e.email_id, e.type, e.recipient, e.data, e.created_at
  FROM events e
  WHERE NOT EXISTS (SELECT 1 FROM event_feed f WHERE f.event_id = e.id) AND EXISTS (SELECT 1 FROM emails m WHERE m.id = e.email_id)
  ORDER BY e.rowid;
-- The next event comes after every number the feed gave, even one whose event is gone.
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'events_new', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events_new');
UPDATE sqlite_sequence
  SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'event_feed'), 0), coalesce((SELECT max(seq) FROM events_new), 0))
  WHERE name = 'events_new';
DROP TABLE event_feed;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_email ON events(email_id);
CREATE INDEX events_workspace ON events(workspace_id, created_at);
