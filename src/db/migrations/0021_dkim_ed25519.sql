-- ed25519 DKIM keys (RFC 8463) beside RSA, with dkim_ed25519 on: a domain may hold one ed25519 key besides its
-- RSA keys. It waits (signing = 0) until DNS serves its record, then signs beside the RSA key. The RSA key's
-- life (0020: pending, signing, retiring, retired) is unchanged, and its indexes now cover RSA keys only.
-- An ed25519 row's public_key is the base64 of the raw 32-byte key (RFC 8463 4: the p= value), not SPKI DER.
ALTER TABLE dkim_keys ADD COLUMN algorithm TEXT NOT NULL DEFAULT 'rsa' CHECK (algorithm IN ('rsa', 'ed25519'));
DROP INDEX dkim_keys_signing;
DROP INDEX dkim_keys_pending;
CREATE UNIQUE INDEX dkim_keys_signing ON dkim_keys(domain_id) WHERE signing = 1 AND algorithm = 'rsa';
CREATE UNIQUE INDEX dkim_keys_pending ON dkim_keys(domain_id) WHERE signing = 0 AND retired_at IS NULL AND retire_after IS NULL AND algorithm = 'rsa';
CREATE UNIQUE INDEX dkim_keys_ed25519 ON dkim_keys(domain_id) WHERE algorithm = 'ed25519' AND retired_at IS NULL;
