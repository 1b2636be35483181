-- The planner chooses, for a search newest first, between the GIN index's matches sorted and the newest emails
-- checked one by one; it can only choose well if it knows how rare a word is. A tsvector column's statistics keep
-- its most common words, ten per point of the statistics target: at the default (100) a word outside that list
-- was guessed at hundreds of matches, and a rare word's search checked every email, one by one (hundreds of ms at
-- 20,000 emails instead of 2). At 10,000, the most the target takes, ANALYZE keeps 100,000 words: it costs each
-- search about 13 ms of planning, but at 1,000 (10,000 words) the planner still chose to check every email for
-- rare words at 200,000 emails (a rare word's search 580 ms at the median instead of 90).
ALTER TABLE email_search ALTER COLUMN document SET STATISTICS 10000;
