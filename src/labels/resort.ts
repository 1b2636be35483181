// Applying a label to mail already stored (`apply_to_existing`): a rule files what it matches, a bucket label
// archives what it holds. The work is a row in label_resorts walked newest first in bounded batches, each one
// writer job of its own, so the write lock is never held for long, new mail keeps arriving (it is filed as it
// is stored, above the walk's cursor) and a restart resumes at the cursor. resortPending counts what is left.
import { BackgroundLoop } from '../threads/background-loop.ts';
import { all, get, run, value, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { newId } from '../db/ids.ts';
import type { DbContext, Writer } from '../db/writer.ts';
import type { Log } from '../log.ts';
import { FullDiskNotice } from '../db/full-disk.ts';
import { archiveReceived } from '../emails/lookup.ts';
import { fileInto } from './filing.ts';
import { getRule, matchClause } from './rules.ts';

const BATCH = 500;
const IDLE_POLL_MS = 1000;

/** Starts applying `ruleId`'s rule (or, with null, the label's skip_inbox) to the workspace's stored mail. */
export function* startResort(now: number, workspaceId: string, labelId: string, ruleId: string | null): Query<void> {
  const top = (yield* value<number>('SELECT coalesce(max(search_rowid), 0) + 1 FROM emails WHERE workspace_id = ?', workspaceId))!;
  const total = (yield* value<number>('SELECT count(*) FROM emails WHERE workspace_id = ?', workspaceId))!;
  yield* run(
    'INSERT INTO label_resorts (id, workspace_id, label_id, rule_id, cursor, total, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    newId('q', now),
    workspaceId,
    labelId,
    ruleId,
    top,
    total,
    now,
  );
}

/** Emails of the workspace still to be walked by its resorts. */
export function* resortPending(workspaceId: string): Query<number> {
  return (yield* value<number>('SELECT coalesce(sum(max(total - done, 0)), 0) FROM label_resorts WHERE workspace_id = ?', workspaceId))!;
}

/** Whether any resort is left to walk. */
function* anyResort(): Query<boolean> {
  return (yield* get('SELECT 1 FROM label_resorts LIMIT 1')) !== undefined;
}

interface ResortRow {
  id: string;
  workspace_id: string;
  label_id: string;
  rule_id: string | null;
  cursor: number;
}

/** The writer job `labels.resort`: one batch of the oldest resort. Returns whether any work is left. */
export function* resortStep(ctx: DbContext, opts: { batch?: number } = {}): Query<{ more: boolean }> {
  const now = ctx.clock.now();
  const job = yield* get<ResortRow>('SELECT id, workspace_id, label_id, rule_id, cursor FROM label_resorts ORDER BY created_at, id LIMIT 1');
  if (!job) return { more: false };
  const limit = opts.batch ?? BATCH;
  const rule = job.rule_id ? yield* getRule(job.workspace_id, job.rule_id) : null;
  // A rule's conditions, or for a bucket the mail already in the label.
  const { sql, params } = rule ? matchClause(rule) : { sql: 'EXISTS (SELECT 1 FROM json_each(e.labels_json) j WHERE j.value = ?)', params: [job.label_id] };
  const walked = yield* all<{ rowid: number; id: string; hit: number }>(
    `SELECT e.search_rowid AS rowid, e.id, ${sql} AS hit FROM emails e WHERE e.workspace_id = ? AND e.search_rowid < ? ORDER BY e.search_rowid DESC LIMIT ?`,
    ...params, job.workspace_id, job.cursor, limit,
  );
  let filed = 0;
  let skipped = 0;
  for (const e of walked) {
    if (!e.hit) continue;
    if (rule) {
      const result = yield* fileInto(now, job.workspace_id, e.id, [{ labelId: job.label_id, skipInbox: rule.skipInbox }]);
      filed += result.added.length;
      skipped += result.capped.length;
    } else if (yield* archiveReceived(e.id, now)) filed++;
  }
  if (walked.length < limit) {
    yield* run('DELETE FROM label_resorts WHERE id = ?', job.id);
    // The writer keeps a job's log lines with its batch and drops them when the batch is run again (writer-worker.ts).
    ctx.log.info('label applied to stored mail', { labelId: job.label_id, ruleId: job.rule_id, filed, skipped });
  } else {
    yield* run('UPDATE label_resorts SET cursor = ?, done = done + ?, filed = filed + ?, skipped = skipped + ? WHERE id = ?', walked.at(-1)!.rowid, walked.length, filed, skipped, job.id);
  }
  return { more: yield* anyResort() };
}

/** Runs resort batches on the writer one after another while there is work, and looks for work every second. */
export class Resorter extends BackgroundLoop {
  private readonly fullDisk: FullDiskNotice;

  constructor(
    private readonly store: Store,
    private readonly writer: Pick<Writer, 'commit'>,
    private readonly clock: { now(): number },
    private readonly log: Log,
    /** Emails walked per writer job (tests make it small to stop mid-way). */
    private readonly batch = BATCH,
  ) {
    super();
    this.fullDisk = new FullDiskNotice(log, 'applying labels to stored mail');
  }

  protected async run(): Promise<void> {
    try {
      // Looking costs a read; only work costs a writer transaction.
      let more = await this.store.read(anyResort());
      while (more && !this.stopped) {
        const [result] = await this.writer.commit([{ kind: 'labels.resort', payload: { batch: this.batch } }], { now: this.clock.now(), log: this.log });
        more = result.more;
      }
      this.fullDisk.succeeded();
    } catch (err) {
      if (!this.fullDisk.failed(err)) this.log.error('applying labels to stored mail failed; trying again shortly', { err });
    }
    if (!this.stopped) this.schedule(IDLE_POLL_MS);
  }
}
