// The check of a prefix walk on SQLite (list.ts checkedWalk): whether each email a walk by the first 3 letters
// found has the whole term, on the words of its subject, participants, attachment names, then body, as FTS5
// would match it. Read-only queries (db/query.ts).
import { all, type Query } from '../db/query.ts';
import { wordsOf } from './search-query.ts';
import { bodies, startsAWord } from './snippets.ts';

/** What the check reads of each email the walk found. */
export interface WalkedRow {
  id: string;
  subject: string;
  from_name: string | null;
  from_address: string;
  to_json: string;
}

/** The rows whose indexed text has every checked term: its words in a row, the last one as a prefix. */
export function* withWords<R extends WalkedRow>(rows: R[], checks: string[][]): Query<R[]> {
  if (!rows.length) return [];
  const extra = new Map(
    (
      yield* all<{ id: string; cc_json: string; bcc_json: string; reply_to_json: string; files: string | null }>(
        `SELECT e.id, e.cc_json, e.bcc_json, e.reply_to_json, (SELECT group_concat(a.filename, char(10)) FROM email_attachments a WHERE a.email_id = e.id) AS files
         FROM emails e WHERE e.id IN (SELECT value FROM json_each(?))`,
        JSON.stringify(rows.map((r) => r.id)),
      )
    ).map((r) => [r.id, r]),
  );
  // The fields without the body first; the body is read only for emails they do not settle.
  const fields = new Map(
    rows.map((row) => {
      const x = extra.get(row.id);
      const people = [row.to_json, x?.cc_json ?? '[]', x?.bcc_json ?? '[]', x?.reply_to_json ?? '[]'].flatMap((json) => JSON.parse(json) as Array<{ name?: string; address: string }>);
      return [row.id, [row.subject, [row.from_name ?? '', row.from_address, ...people.map((m) => `${m.name ?? ''} ${m.address}`)].join('\n'), x?.files ?? '']];
    }),
  );
  const missing = (row: R) => checks.filter((words) => !fields.get(row.id)!.some((field) => hasRun(field, words)));
  const unsettled = rows.filter((row) => missing(row).length > 0);
  const texts = yield* bodies(unsettled.map((r) => r.id));
  return rows.filter((row) => {
    const left = missing(row);
    return left.length === 0 || left.every((words) => hasRun(texts.get(row.id) ?? '', words));
  });
}

/** The text has `words` one after the other, the last one as a prefix (as FTS5 would match `"w1 w2 w3"*`). */
function hasRun(text: string, words: string[]): boolean {
  if (words.length === 1) return startsAWord(text, words[0]);
  const field = wordsOf(text);
  const n = words.length;
  for (let i = 0; i + n <= field.length; i++) {
    let k = 0;
    while (k < n - 1 && field[i + k] === words[k]) k++;
    if (k === n - 1 && field[i + k].startsWith(words[k])) return true;
  }
  return false;
}
