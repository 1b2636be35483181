-- No change to the schema. This release writes two things an earlier one would read wrongly without noticing:
-- messages packed against their bodies' quoted-printable form too (mail/packing.ts, marked 00 04), which an
-- earlier release would serve as the packed bytes themselves, and events stored without their id (the column
-- holds '' and emails/events.ts makes the id from the seq), which it would show with an empty id. Its version
-- number makes an earlier release refuse this database ("newer than this release knows") instead.
SELECT 1;
