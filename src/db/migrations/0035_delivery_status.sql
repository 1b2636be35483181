-- Delivery status where people look: how a send came in, and complaints on the queue row.
--
-- How a send came in: `dashboard` (a signed-in browser session), `api` (an API key), `smtp` (SMTP submission);
-- null for the box's own mail (forwarded copies, confirmations) and mail sent before this column. Only mail
-- sent from the dashboard gets a delivery notice in the sender's mailbox when it bounces or draws a complaint.
ALTER TABLE emails ADD COLUMN sent_by TEXT CHECK (sent_by IN ('dashboard', 'api', 'smtp'));

-- When the recipient complained about the message (an ARF report at its VERP address): the queue row then says
-- all there is to say about the recipient, so the mailbox reads a page's states from deliveries alone.
ALTER TABLE deliveries ADD COLUMN complained_at INTEGER;

-- Complaints recorded before this column: one pass over the events (no index on their type; once, at start).
UPDATE deliveries SET complained_at = c.at
FROM (SELECT email_id, recipient, min(created_at) AS at FROM events WHERE type = 'complained' GROUP BY email_id, recipient) AS c
WHERE deliveries.email_id = c.email_id AND deliveries.recipient = c.recipient;
