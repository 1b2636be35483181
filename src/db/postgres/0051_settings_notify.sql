-- Each node keeps what every request and send reads of keys, domains, plans and label rules (db/node-cache.ts), and
-- forgets it all when any of these changes: a notice on `mailwright_settings` at COMMIT, folded by PostgreSQL into
-- one per transaction. Only the columns a node keeps count: a key's last use (written each minute it is used) and a
-- domain's periodic DNS check (which writes its status even when it stays the same) notify nobody.
CREATE FUNCTION notify_settings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mailwright_settings', '');
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_settings AFTER UPDATE OF workspace_id, secret_hash, revoked_at, permission, domain_id, inbox_ids OR DELETE OR TRUNCATE
  ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER workspaces_settings AFTER DELETE OR TRUNCATE ON workspaces FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER inboxes_settings AFTER UPDATE OF workspace_id, address OR DELETE OR TRUNCATE ON inboxes FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER subscriptions_settings AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON subscriptions FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER label_rules_settings AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON label_rules FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER domains_settings AFTER INSERT OR DELETE OR TRUNCATE ON domains FOR EACH STATEMENT EXECUTE FUNCTION notify_settings();
CREATE TRIGGER domains_settings_changed AFTER UPDATE ON domains FOR EACH ROW
  WHEN ((OLD.workspace_id, OLD.name, OLD.status, OLD.marketing, OLD.return_path) IS DISTINCT FROM (NEW.workspace_id, NEW.name, NEW.status, NEW.marketing, NEW.return_path))
  EXECUTE FUNCTION notify_settings();
