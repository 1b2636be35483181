-- Nothing on SQLite: on PostgreSQL this version keeps each email's full-text document in its row
-- (db/postgres/0048_search_inline.sql). The number is taken here too, so that both schemas stand at one version.
SELECT 1;
