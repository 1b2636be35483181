// The content filter's size bound: one workspace learns N messages (default 100,000) over 200 days in a fresh
// database, each a corpus message of the training or validation split with a tenth of its words replaced by
// words never seen before (real mail keeps bringing new names, numbers and tracking ids), pruning whenever
// train() says it is due. Reports the bytes of the filter's tables (dbstat) and the time of the longest prune.
import { rmSync } from 'node:fs';
import { prune, score, train } from '../../src/filter/store.ts';
import { runOn } from '../../src/db/sqlite-query.ts';
import { fmt, mulberry32, reportGoal, table } from './lib.ts';
import { addEmail, addWorkspace, freshDb, type Prepared } from './spam-corpus-db.ts';

const DAYS = 200;
const FRESH_SHARE = 0.1;
const TABLES = ['spam_filter_tokens', 'spam_filter_trained', 'spam_filter_models', 'sqlite_autoindex_spam_filter_models_1'];

export function modelSize(pool: readonly Prepared[], messages: number, start: number): void {
  const { db, dir } = freshDb('mw-bench-spam-size-');
  try {
    const ws = 'ws_size';
    addWorkspace(db, ws);
    const rand = mulberry32(100_000);
    let fresh = 0;
    let prunes = 0;
    let longestPruneMs = 0;
    const t0 = Date.now();
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < messages; i += 100) {
      // 100 at a time in one transaction, as the writer's group commits would.
      const due = db.transaction(() => {
        let pruneDue = false;
        for (let j = i; j < Math.min(i + 100, messages); j++) {
          const base = pool[Math.floor(rand() * pool.length)]!;
          const tokens = base.tokens.tokens.map((t) => (!t.includes(':') && rand() < FRESH_SHARE ? `${t}${++fresh}` : t));
          const now = start + Math.floor((j / messages) * DAYS * 86_400_000);
          const r = runOn(db, train({ workspaceId: ws, emailId: addEmail(db, ws), class: base.message.spam ? 'spam' : 'ham', tokens, source: 'auto', now }));
          pruneDue ||= r.pruneDue;
        }
        return pruneDue;
      })();
      if (due) {
        const p0 = performance.now();
        db.transaction(() => runOn(db, prune(ws, start + Math.floor((i / messages) * DAYS * 86_400_000))))();
        longestPruneMs = Math.max(longestPruneMs, performance.now() - p0);
        prunes++;
      }
    }
    const trainCpu = process.cpuUsage(cpu0);
    const seconds = (Date.now() - t0) / 1000;
    const bytes = db.prepare(`SELECT name, sum(pgsize) AS size FROM dbstat WHERE name IN (${TABLES.map(() => '?').join(', ')}) GROUP BY name`).all(...TABLES) as Array<{ name: string; size: number }>;
    const rows = db.prepare('SELECT tokens, spam, ham FROM spam_filter_models WHERE workspace_id = ?').get(ws) as { tokens: number; spam: number; ham: number };
    const trained = db.prepare('SELECT count(*) FROM spam_filter_trained').pluck().get() as number;
    const total = bytes.reduce((n, b) => n + b.size, 0);
    // Scoring against the grown model, for its read cost.
    const c0 = process.cpuUsage();
    for (const p of pool.slice(0, 500)) runOn(db, score(ws, p.tokens));
    const c1 = process.cpuUsage(c0);
    console.log(`\n### Model size after ${fmt(messages)} learned messages over ${DAYS} days (one workspace)\n`);
    table(['table', 'rows', 'bytes'], [
      ...bytes.map((b) => [b.name, b.name === 'spam_filter_tokens' ? fmt(rows.tokens) : b.name === 'spam_filter_trained' ? fmt(trained) : '1', `${fmt(b.size / 2 ** 20, 1)} MiB`]),
      ['**total**', '', `**${fmt(total / 2 ** 20, 1)} MiB**`],
    ]);
    console.log(
      `\nlearned ${fmt(rows.spam)} spam + ${fmt(rows.ham)} ham in ${fmt(seconds)} s (${fmt((trainCpu.user + trainCpu.system) / messages)} µs CPU per message, ` +
        `in transactions of 100); ${prunes} prunes, the longest ${fmt(longestPruneMs)} ms; scoring on this model ${fmt((c1.user + c1.system) / 500)} µs CPU per message`,
    );
    reportGoal({ goal: `content filter: model tables after ${fmt(messages)} messages`, measured: `${fmt(total / 2 ** 20, 1)} MiB`, target: '< 20 MiB', pass: total < 20 * 2 ** 20 });
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
