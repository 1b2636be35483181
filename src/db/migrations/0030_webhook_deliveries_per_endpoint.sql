-- Webhook slots are handed out per workspace and endpoint (catalogue RES-16), so deliveries are claimed an
-- endpoint at a time: its oldest due delivery and the next few, in due order. This index answers both without
-- reading the endpoint's backlog. The box-wide due index served only the old claim, which read deliveries in
-- due order across every endpoint, and goes.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries(webhook_id, next_attempt_at, id) WHERE status = 'pending';
