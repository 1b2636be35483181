-- The new text of a received message without its quoted history and signature (mail/reply.ts extractReply),
-- worked out once on the analyze threads and kept beside the bodies: the email record's, the list's and the
-- email.received webhook's `extractedText`. Null for sent mail and for mail received before this column.
ALTER TABLE email_contents ADD COLUMN extracted_text TEXT;
