-- Nothing on SQLite: on PostgreSQL this version adds the triggers that tell every node a setting it keeps has changed
-- (db/postgres/0051_settings_notify.sql). The number is taken here too, so that both schemas stand at one version.
SELECT 1;
