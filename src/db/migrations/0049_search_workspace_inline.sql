-- Nothing on SQLite: on PostgreSQL this version keeps email_search's workspace id in its row
-- (db/postgres/0049_search_workspace_inline.sql). The number is taken here too, so that both schemas stand at one version.
SELECT 1;
