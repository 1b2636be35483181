-- Each node also keeps a workspace's sending state (account/reputation.ts: not paused, and its 30-day rates judged
-- below the pause with enough mail sent to judge), and forgets it when what could pause it changes: a pause or a
-- resume (rare: everything kept is forgotten), or a bounce or complaint counted in daily_stats (a notice naming the
-- workspace, `sending <id>`, whose entries alone are forgotten: db/node-cache.ts). Mail sent and delivered, which
-- every send and delivery counts, notifies nobody: more of it only lowers the rates. The triggers are per statement,
-- so daily_stats' counter upserts are still merged in a group commit (postgres-merge.ts leaves alone only tables
-- with row triggers); PostgreSQL takes no column list with transition tables, so the rows are compared here.
CREATE FUNCTION notify_sending_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM pg_notify('mailwright_settings', 'sending ' || workspace_id)
      FROM (SELECT DISTINCT workspace_id FROM added WHERE bounced <> 0 OR complained <> 0) counted;
  ELSE
    PERFORM pg_notify('mailwright_settings', 'sending ' || workspace_id)
      FROM (SELECT DISTINCT a.workspace_id FROM added a JOIN removed r USING (workspace_id, day)
            WHERE a.bounced <> r.bounced OR a.complained <> r.complained) counted;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER workspaces_sending AFTER UPDATE OF sending_paused_at, sending_pause_reason, sending_resumed_at
  ON workspaces FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER daily_stats_sending_added AFTER INSERT ON daily_stats REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION notify_sending_counts();
CREATE TRIGGER daily_stats_sending_counted AFTER UPDATE ON daily_stats REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION notify_sending_counts();
CREATE TRIGGER daily_stats_sending_removed AFTER DELETE OR TRUNCATE ON daily_stats FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
