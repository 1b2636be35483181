// Where an email's row goes in email_contents (its rowid), so that the table's pages stay full (the goal:
// storage near the message size). A send's bodies are stored as strings at submission and replaced packed,
// several times smaller, once its first signed copy is stored (outgoing.ts packStoredBodies). Rewritten in place,
// each packed row left a hole in a page that rows appended after it never fill: about 230 bytes a send on the
// storage benchmark. So the rows still to be packed are kept apart, from WAITING up, and each is moved down when
// packed, past the newest packed row: the pages there fill in order, and those of the waiting rows are freed as
// they empty. Nothing else reads these rowids: every reader finds a row by its email_id.

/** The first rowid of the rows waiting to be packed: 2^52, far past any count of emails and exact in a double. */
const WAITING = 4503599627370496;

/** SQL for the rowid of a row stored packed: one past the newest packed row. */
export const PACKED_ROWID = `(SELECT coalesce(max(rowid), 0) + 1 FROM email_contents WHERE rowid < ${WAITING})`;

/** SQL for the rowid of a row stored to be packed later: one past the newest row, and WAITING at least. */
export const WAITING_ROWID = `(SELECT max(coalesce(max(rowid), 0) + 1, ${WAITING}) FROM email_contents)`;
