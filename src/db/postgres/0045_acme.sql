-- Certificates by ACME, kept in the store so that every node of a box serves the same ones (acme/stored.ts).
-- The account key is in box_settings ('acme_account_key'): one ACME account per box.

-- HTTP-01 key authorizations of the orders in flight: any node's port 80 answers the CA from here.
CREATE TABLE acme_challenges (
  token              TEXT PRIMARY KEY,
  key_authorization  TEXT NOT NULL,
  created_at         BIGINT NOT NULL
);

-- The certificate held for each name: its key and full chain (PEM). Nodes poll updated_at to pick up a renewal.
CREATE TABLE acme_certificates (
  name        TEXT PRIMARY KEY,
  key_pem     TEXT NOT NULL,
  cert_pem    TEXT NOT NULL,
  not_after   BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);

-- The last attempt for each name: the error and the backoff it set (doctor and the Overview read it).
CREATE TABLE acme_status (
  name           TEXT PRIMARY KEY,
  last_error     TEXT,
  last_error_at  BIGINT,
  failures       BIGINT NOT NULL DEFAULT 0,
  retry_at       BIGINT,
  updated_at     BIGINT NOT NULL
);
