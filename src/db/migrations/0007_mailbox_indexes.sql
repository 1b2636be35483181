-- GET /emails, newest first (src/emails/list.ts). The order is emails.search_rowid, the time-ordered key that
-- is also the rowid of the email's row in email_search (arrival ms * 1024 + a counter): a list walks one of
-- these indexes backwards and a search walks the FTS rowid backwards, and neither ever sorts its matches
-- (performance-baseline.md, choice 1). The partial indexes carry the views that would otherwise skip most rows.

-- Every list without a narrower index.
CREATE INDEX emails_newest ON emails(workspace_id, search_rowid);
-- The Inbox view (archived=false): received mail, not archived, not spam. Its WHERE is written exactly so in
-- list.ts, or SQLite cannot prove the index applies.
CREATE INDEX emails_inbox_view ON emails(workspace_id, search_rowid)
  WHERE direction = 'in' AND archived_at IS NULL AND category IS NOT 'spam';
-- Mail that carries a label (the `label` filter walks only these).
CREATE INDEX emails_labelled ON emails(workspace_id, search_rowid) WHERE labels_json <> '[]';
-- One inbox, newest first (it keeps the (workspace_id, inbox_id) prefix the old index served).
DROP INDEX emails_inbox;
CREATE INDEX emails_inbox ON emails(workspace_id, inbox_id, search_rowid);

-- Every address (lower case) and display name that a workspace's mail was from or to; emails/search-index.ts
-- adds them as it indexes each email. The `from` and `to` filters (substrings) first find here the addresses
-- they can mean (the trigram index answers substrings), then walk only the full-text rows that name one of
-- those addresses, and check each email.
CREATE TABLE correspondents (
  id           INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  address      TEXT NOT NULL,
  name         TEXT NOT NULL DEFAULT '',
  UNIQUE (workspace_id, address, name)
);
CREATE VIRTUAL TABLE correspondents_search USING fts5(address, name, content = 'correspondents', content_rowid = 'id', tokenize = 'trigram');

INSERT INTO correspondents (workspace_id, address, name)
  SELECT workspace_id, lower(from_address), coalesce(from_name, '') FROM emails
  UNION
  SELECT e.workspace_id, lower(m.value ->> 'address'), coalesce(m.value ->> 'name', '')
    FROM emails e, json_each(CASE WHEN json_valid(e.to_json) THEN e.to_json ELSE '[]' END) m WHERE m.value ->> 'address' IS NOT NULL
  UNION
  SELECT e.workspace_id, lower(m.value ->> 'address'), coalesce(m.value ->> 'name', '')
    FROM emails e, json_each(CASE WHEN json_valid(e.cc_json) THEN e.cc_json ELSE '[]' END) m WHERE m.value ->> 'address' IS NOT NULL
  UNION
  SELECT e.workspace_id, lower(m.value ->> 'address'), coalesce(m.value ->> 'name', '')
    FROM emails e, json_each(CASE WHEN json_valid(e.bcc_json) THEN e.bcc_json ELSE '[]' END) m WHERE m.value ->> 'address' IS NOT NULL
  ON CONFLICT DO NOTHING;
INSERT INTO correspondents_search (correspondents_search) VALUES ('rebuild');

-- Every email's full-text row, rewritten in the layout emails/search-index.ts writes (participants end with a
-- line of role tokens, which the `from` and `to` filters use). Sent mail stored before sends were indexed has
-- no search_rowid: it gets one from its creation time (at the top of its millisecond, where received mail never
-- is unless 512 arrived in that millisecond; a clash leaves that email unindexed rather than failing the upgrade).
CREATE TEMP TABLE unindexed AS
  SELECT id, created_at * 1024 + 1024 - row_number() OVER (PARTITION BY created_at ORDER BY id) AS search_rowid,
    row_number() OVER (PARTITION BY created_at ORDER BY id) AS n
  FROM emails WHERE search_rowid IS NULL;
DELETE FROM temp.unindexed WHERE n > 512 OR search_rowid IN (SELECT search_rowid FROM emails WHERE search_rowid IS NOT NULL);
DELETE FROM email_search WHERE rowid IN (SELECT search_rowid FROM emails WHERE search_rowid IS NOT NULL);
UPDATE emails SET search_rowid = (SELECT u.search_rowid FROM temp.unindexed u WHERE u.id = emails.id)
  WHERE id IN (SELECT id FROM temp.unindexed);
DROP TABLE temp.unindexed;
INSERT INTO email_search (rowid, subject, body, participants, attachments)
  SELECT e.search_rowid, e.subject, coalesce(c.text_body, c.html_body, ''),
    (SELECT group_concat(line, char(10)) FROM (
      SELECT trim(coalesce(e.from_name, '') || ' ' || e.from_address) AS line
      UNION ALL
      SELECT trim(coalesce(m.value ->> 'name', '') || ' ' || (m.value ->> 'address')) FROM json_each(CASE WHEN json_valid(e.to_json) THEN e.to_json ELSE '[]' END) m
      UNION ALL
      SELECT trim(coalesce(m.value ->> 'name', '') || ' ' || (m.value ->> 'address')) FROM json_each(CASE WHEN json_valid(e.cc_json) THEN e.cc_json ELSE '[]' END) m
      UNION ALL
      SELECT trim(coalesce(m.value ->> 'name', '') || ' ' || (m.value ->> 'address')) FROM json_each(CASE WHEN json_valid(e.bcc_json) THEN e.bcc_json ELSE '[]' END) m
      UNION ALL
      SELECT trim(coalesce(m.value ->> 'name', '') || ' ' || (m.value ->> 'address')) FROM json_each(CASE WHEN json_valid(e.reply_to_json) THEN e.reply_to_json ELSE '[]' END) m
      UNION ALL
      SELECT (SELECT group_concat(token, ' ') FROM (
        SELECT 'f' || lower(hex(lower(e.from_address))) AS token WHERE e.from_address <> ''
        UNION ALL
        SELECT 't' || lower(hex(lower(m.value ->> 'address'))) FROM json_each(CASE WHEN json_valid(e.to_json) THEN e.to_json ELSE '[]' END) m
        UNION ALL
        SELECT 't' || lower(hex(lower(m.value ->> 'address'))) FROM json_each(CASE WHEN json_valid(e.cc_json) THEN e.cc_json ELSE '[]' END) m
        UNION ALL
        SELECT 't' || lower(hex(lower(m.value ->> 'address'))) FROM json_each(CASE WHEN json_valid(e.bcc_json) THEN e.bcc_json ELSE '[]' END) m))
    )),
    coalesce((SELECT group_concat(a.filename, char(10)) FROM email_attachments a WHERE a.email_id = e.id), '')
  FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.search_rowid IS NOT NULL;
