-- A local domain (mailwright try): a name such as mail.localhost (RFC 6761: never resolved beyond this machine)
-- that is verified and ready for inbound mail without DNS, and is never offered for a DNS check. Only `try` sets
-- it, on a data directory of its own; no API request can.
ALTER TABLE domains ADD COLUMN local INTEGER NOT NULL DEFAULT 0;
