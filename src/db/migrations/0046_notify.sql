-- Nothing on SQLite: on PostgreSQL this version adds the triggers that tell the other nodes of committed events
-- (db/postgres/0046_notify.sql). The number is taken here too, so that both schemas stand at the same version.
SELECT 1;
