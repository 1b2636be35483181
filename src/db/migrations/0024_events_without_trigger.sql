-- The events trigger of 0019 goes: emails/events.ts addEvent, the only writer of events, now writes the feed row
-- and the webhook outbox rows itself, in the same transaction as the event. A trigger on events made every
-- insert into it open a statement journal and flush FTS5's pending rows of the group commit, 20-40 µs of the
-- writer thread per API send (issue 22).
DROP TRIGGER IF EXISTS events_outbox;
