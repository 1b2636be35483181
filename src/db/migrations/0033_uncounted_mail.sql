-- Mail that is not the workspace's sending, left out of analytics and reputation: template test sends and the
-- box's own notices (forwarding confirmations). Their events are still stored and shown; daily_stats and the
-- per-domain and per-subject counts skip them (emails/events.ts, emails/analytics.ts).
ALTER TABLE emails ADD COLUMN counted INTEGER NOT NULL DEFAULT 1;
-- Test sends made before this release; earlier confirmations carry no mark and stay counted.
UPDATE emails SET counted = 0 WHERE is_test = 1;
