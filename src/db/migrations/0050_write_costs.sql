-- Nothing on SQLite: on PostgreSQL this version leaves room for heap-only updates of emails and compresses a send's
-- bodies with lz4 (db/postgres/0050_write_costs.sql). The number is taken here too, so that both schemas stand at one version.
SELECT 1;
