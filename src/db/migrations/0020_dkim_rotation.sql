-- DKIM rotation gated on DNS (issue 21): a domain signs with one key (signing = 1); a rotation adds a pending
-- key (signing = 0, no retire_after) that starts signing only once DNS serves it; the key it replaces stays
-- published until retire_after (the queue's lifetime later, so mail signed before still verifies), then is retired.
DROP INDEX dkim_keys_active;
ALTER TABLE dkim_keys ADD COLUMN signing INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dkim_keys ADD COLUMN retire_after INTEGER;
UPDATE dkim_keys SET signing = 1 WHERE retired_at IS NULL;
CREATE UNIQUE INDEX dkim_keys_signing ON dkim_keys(domain_id) WHERE signing = 1;
CREATE UNIQUE INDEX dkim_keys_pending ON dkim_keys(domain_id) WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NULL;
