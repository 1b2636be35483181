-- The URL prefixes of a domain's first-party integration (PATCH /domains/:id `unsubscribe_urls`): marketing mail
-- from the domain keeps the sender's own one-click List-Unsubscribe pair only when its HTTPS URL starts with one
-- of them and is written in the body; otherwise the box's managed pair replaces it. A JSON array of https URLs.
ALTER TABLE domains ADD COLUMN unsubscribe_urls TEXT NOT NULL DEFAULT '[]';
