-- What an API key may do (account/key-scope.ts): `full_access` (every key made before this), `sending_access`
-- (sends, optionally from one domain) or `inbox_access` (the mail of the inboxes in inbox_ids, a JSON array).
-- emails.sent_by_key: the key a send came in with, so a sending key reads back only its own sends.
ALTER TABLE api_keys ADD COLUMN permission TEXT NOT NULL DEFAULT 'full_access' CHECK (permission IN ('full_access', 'sending_access', 'inbox_access'));
ALTER TABLE api_keys ADD COLUMN domain_id TEXT;
ALTER TABLE api_keys ADD COLUMN inbox_ids TEXT;
ALTER TABLE emails ADD COLUMN sent_by_key TEXT;
CREATE INDEX emails_sent_by_key ON emails(sent_by_key, id) WHERE sent_by_key IS NOT NULL;
