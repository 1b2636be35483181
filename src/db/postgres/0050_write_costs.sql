-- Two costs of every sent email on PostgreSQL, measured with pg_stat_statements under the outbound benchmark:
-- * An email's row is updated twice soon after it is written (its size and signing time, then its status after
--   the first attempt). With full pages each update wrote a new entry in every one of the table's thirteen
--   indexes (75 µs); with room left in the page the updates are heap-only (HOT: none of those columns is
--   indexed) and touch no index. New pages keep 15% free; the rows already stored are not moved.
-- * A send's bodies are stored as text until its signed copy is stored, then packed (deflated, mail/packing.ts).
--   pglz compressing 10 KB of text took most of the contents' insert (172 µs); lz4 does it several times faster.
--   A server built without lz4 keeps pglz.
ALTER TABLE emails SET (fillfactor = 85);
DO $$
BEGIN
  ALTER TABLE email_contents ALTER COLUMN text_body SET COMPRESSION lz4, ALTER COLUMN html_body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
