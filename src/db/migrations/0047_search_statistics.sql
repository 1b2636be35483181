-- Nothing on SQLite: on PostgreSQL this version tells the planner more of the full-text index's words
-- (db/postgres/0047_search_statistics.sql). The number is taken here too, so that both schemas stand at one version.
SELECT 1;
