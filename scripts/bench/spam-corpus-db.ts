// The content-filter benchmark's database: a fresh one opened as the app opens it, workspaces, received email
// rows for the model to learn (training refuses an email of another workspace) and a message prepared once
// (parsed and tokenized) for scoring or learning.
import { openDatabase, type Db } from '../../src/db/open.ts';
import { migrate } from '../../src/db/migrate.ts';
import { train, type SpamClass } from '../../src/filter/store.ts';
import { runOn } from '../../src/db/sqlite-query.ts';
import type { MessageTokens } from '../../src/filter/tokens.ts';
import { benchDir } from './lib.ts';
import type { CorpusMessage } from './spam-corpus-data.ts';

export interface Prepared {
  message: CorpusMessage;
  tokens: MessageTokens;
  bytes: number;
}

export const NOW = Date.UTC(2026, 0, 1);
let emailSeq = 0;

export function freshDb(label: string): { db: Db; dir: string } {
  const dir = benchDir(label);
  const db = openDatabase(dir);
  migrate(db);
  return { db, dir };
}

export function addWorkspace(db: Db, id: string): void {
  db.prepare('INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)').run(id, id, NOW);
}

export function addEmail(db: Db, workspaceId: string): string {
  const id = `em_${String(++emailSeq).padStart(26, '0')}`;
  db.prepare("INSERT INTO emails (id, workspace_id, direction, status, message_id, thread_id, from_address, created_at) VALUES (?, ?, 'in', 'received', ?, ?, 'a@x.example', ?)").run(
    id, workspaceId, `${id}@x.example`, id, NOW,
  );
  return id;
}

export function learn(db: Db, workspaceId: string, items: readonly Prepared[]): void {
  for (const p of items) {
    const cls: SpamClass = p.message.spam ? 'spam' : 'ham';
    const emailId = addEmail(db, workspaceId);
    // One transaction per message, as train() had of its own before it was a query.
    db.transaction(() => runOn(db, train({ workspaceId, emailId, class: cls, tokens: p.tokens.tokens, source: 'owner', now: NOW })))();
  }
}

