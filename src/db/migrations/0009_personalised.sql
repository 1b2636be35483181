-- Mail whose links name the recipient (the box's unsubscribe link on marketing mail, open and click tracking)
-- goes out as one copy per recipient, each composed and DKIM-signed once before its first attempt.

-- What was decided for an email when its first copy was signed, never changed afterwards, so every later
-- copy (a retry, a recipient claimed later) agrees with the first even if the domain's switches change.
-- An email has either this row or a shared copy in email_contents.raw, never both.
CREATE TABLE personalised_emails (
  email_id       TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  unsubscribe    INTEGER NOT NULL,             -- 1: the box's List-Unsubscribe and List-Unsubscribe-Post
  open_tracking  INTEGER NOT NULL,
  click_tracking INTEGER NOT NULL,
  links          INTEGER NOT NULL,             -- how many rows email_links has for it
  created_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- The http(s) links of a click-tracked email's HTML, in order: the only places its click redirects lead.
CREATE TABLE email_links (
  email_id TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  url      TEXT NOT NULL,
  PRIMARY KEY (email_id, position)
) WITHOUT ROWID;

-- A recipient's own signed bytes, exactly as transmitted at every attempt. Apart from the deliveries row,
-- which every attempt rewrites (SQLite rewrites whole rows, blobs included).
CREATE TABLE delivery_contents (
  delivery_id INTEGER PRIMARY KEY REFERENCES deliveries(id) ON DELETE CASCADE,
  raw         BLOB NOT NULL
);
