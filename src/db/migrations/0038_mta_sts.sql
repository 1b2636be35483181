-- The MTA-STS mode (RFC 8461 5) of the policy the box serves for a domain that receives mail here, at
-- https://mta-sts.<domain>/.well-known/mta-sts.txt: `testing` until the owner switches it to `enforce`
-- (PATCH /domains/:id `mta_sts_mode`). The policy id is derived from the file's content, so it needs no column.
ALTER TABLE domains ADD COLUMN mta_sts_mode TEXT NOT NULL DEFAULT 'testing' CHECK (mta_sts_mode IN ('testing', 'enforce'));
