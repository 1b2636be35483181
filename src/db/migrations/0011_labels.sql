-- Labels of a workspace ({id, name, color}, API-SPEC.md "Label and rule"). An email's labels are the lbl_ ids in
-- emails.labels_json (at most 10, in the order they were applied): the `label` filter walks the
-- emails_labelled index newest first and checks that short list, so it never sorts, and a rename touches
-- one row. Names are unique per workspace regardless of ASCII case (how the filter matches them).
CREATE TABLE labels (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  color        TEXT NOT NULL,
  skip_inbox   INTEGER NOT NULL DEFAULT 0,
  created_at   INTEGER NOT NULL
);
CREATE UNIQUE INDEX labels_name ON labels(workspace_id, name COLLATE NOCASE);

-- Until now labels_json held the names a send asked for: each name becomes a label, and the list its ids.
-- (Random ULID-shaped ids with a zero time part: they sort before every label made from now on.)
INSERT INTO labels (id, workspace_id, name, color, created_at)
SELECT 'lbl_0000000000' || (
         SELECT group_concat(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 1 + abs(random() % 32), 1), '')
         FROM (SELECT 1 FROM json_each('[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]')) AS ignored_per_char
         WHERE n.name IS NOT NULL),
       n.workspace_id, n.name, '#6b7280', n.first_at
FROM (SELECT e.workspace_id, min(j.value) AS name, min(e.created_at) AS first_at
      FROM emails e, json_each(e.labels_json) j
      WHERE e.labels_json <> '[]'
      GROUP BY e.workspace_id, j.value COLLATE NOCASE) AS n;

UPDATE emails SET labels_json = (
  SELECT json_group_array(id) FROM (
    SELECT l.id FROM json_each(emails.labels_json) j JOIN labels l ON l.workspace_id = emails.workspace_id AND l.name = j.value COLLATE NOCASE
    GROUP BY l.id ORDER BY min(j.key)))
WHERE labels_json <> '[]';
