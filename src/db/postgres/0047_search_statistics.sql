-- The planner chooses, for a search newest first, between the GIN index's matches sorted and the newest emails
-- checked one by one; it can only choose well if it knows how rare a word is. A tsvector column's statistics keep
-- its most common words, ten per point of the statistics target: at the default (100) a word outside that list
-- was guessed at hundreds of matches, and a rare word's search checked every email, one by one (hundreds of ms at
-- 20,000 emails instead of 2). At 1,000 it keeps 10,000 words; more costs every search's planning its reading of
-- the list (10,000 words: 2 ms; 100,000: 13 ms).
ALTER TABLE email_search ALTER COLUMN document SET STATISTICS 1000;
