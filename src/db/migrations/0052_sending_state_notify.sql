-- Nothing on SQLite: on PostgreSQL this version adds the triggers that tell every node a workspace's sending state
-- may have changed (db/postgres/0052_sending_state_notify.sql). The number is taken here too, so that both schemas
-- stand at one version.
SELECT 1;
