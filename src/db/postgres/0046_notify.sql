-- Every node's live stream wakes when any node commits events (LISTEN mailwright_events, cluster/commit-notices.ts).
-- A statement-level trigger: one notice per statement, sent at COMMIT, and PostgreSQL folds the identical notices
-- of one transaction into one, so a group commit of a hundred sends wakes each node once.
CREATE FUNCTION notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mailwright_events', '');
  RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION notify_events();
CREATE TRIGGER domain_events_notify AFTER INSERT ON domain_events FOR EACH STATEMENT EXECUTE FUNCTION notify_events();
