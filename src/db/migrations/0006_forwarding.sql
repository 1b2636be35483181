-- The pending forwarding confirmation of an inbox: the nonce its signed link carries, the address it is for
-- and when it was issued. Setting another address (or none) replaces or removes it, so older links die;
-- deleting the inbox deletes it.
CREATE TABLE forward_confirmations (
  inbox_id     TEXT PRIMARY KEY REFERENCES inboxes(id) ON DELETE CASCADE,
  nonce        TEXT NOT NULL,
  address      TEXT NOT NULL,
  issued_at    INTEGER NOT NULL,
  confirmed_at INTEGER
) WITHOUT ROWID;
