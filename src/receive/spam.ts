// The spam filter's judgement of one received message for one workspace, gathered on the writer thread as the
// message is filed (file.ts): the workspace's allow and block lists, the sender's history, the content model's
// score of the tokens the analyze thread made, and the door's evidence, combined by filter/combine.ts. Reads
// only. The filter failing never loses mail: the message is then filed without a content verdict, and logged.
import type { DbContext } from '../db/writer.ts';
import { judge, type Judgement } from '../filter/combine.ts';
import { reputationOf } from '../filter/history.ts';
import { matchSenders, type ListMatch } from '../filter/lists.ts';
import { score } from '../filter/store.ts';
import type { Verdict } from '../filter/verdict.ts';
import { unpackTokens } from '../filter/tokens.ts';
import { change, dialect, exec, nothing, together, type Query } from '../db/query.ts';
import type { AnalysisParts } from './analysed.ts';

export interface ToJudge extends Pick<AnalysisParts, 'verdicts' | 'tokens' | 'tokenProblem' | 'evidence'> {
  mailFrom: string;
  /** The single From mailbox (lower-cased address), or null. */
  from: { address: string } | null;
}

/**
 * The judgement, or null when the filter failed. `inTransaction`: run in the caller's transaction (the writer's),
 * whose work a refused statement must not end; false for a read on its own (the writer's reads before the lock on
 * PostgreSQL, file.ts judgeBeforeFiling), which needs no savepoint.
 */
export function* judgeSpam(ctx: DbContext, workspaceId: string, m: ToJudge, inTransaction = true): Query<Judgement | null> {
  const { log } = ctx;
  try {
    return yield* undoable('judge_spam', judgement(ctx, workspaceId, m, inTransaction), inTransaction);
  } catch (err) {
    log.warn('spam filter failed on a received message: filed by the other rules alone', { workspaceId, err });
    return null;
  }
}

function* judgement(ctx: DbContext, workspaceId: string, m: ToJudge, inTransaction: boolean): Query<Judgement> {
  // The block list covers the envelope sender too (what RCPT time already refused when it could); the
  // allow list only the From an owner sees.
  const lists = matchSenders(workspaceId, [m.from?.address ?? '', m.mailFrom]);
  const reputation = m.from ? reputationOf(workspaceId, m.from.address, m.verdicts.dmarc.result === 'pass') : nothing();
  const content = contentOf(ctx, workspaceId, m, inTransaction);
  // Outside a transaction the three reads go out side by side (one round trip on PostgreSQL); inside one, each
  // in turn, since a refused statement there would end the others' too.
  const [[fromEntry, envelopeEntry], signal, scored] = inTransaction ? [yield* lists, yield* reputation, yield* content] : yield* together(lists, reputation, content);
  const list: ListMatch | null = fromEntry?.list === 'block' ? fromEntry : envelopeEntry?.list === 'block' ? envelopeEntry : fromEntry;
  return judge({ ...scored, evidence: m.evidence, reputation: signal ?? null, list });
}

/** The content model's verdict on the message's tokens; a model that cannot be read is a problem, not a failure. */
function* contentOf(ctx: DbContext, workspaceId: string, m: ToJudge, inTransaction: boolean): Query<{ content: Verdict | null; contentProblem: string | null }> {
  if (!m.tokens) return { content: null, contentProblem: m.tokenProblem ?? null };
  try {
    return { content: yield* undoable('spam_score', score(workspaceId, unpackTokens(m.tokens)), inTransaction), contentProblem: m.tokenProblem ?? null };
  } catch (err) {
    ctx.log.warn('content filter could not score a received message: filed without a content verdict', { workspaceId, err });
    return { content: null, contentProblem: 'its model could not be read' };
  }
}

/**
 * `q`, which may fail without failing the filing. On PostgreSQL a refused statement ends the transaction unless
 * it is rolled back to a savepoint taken before; SQLite goes on after one, so it takes none.
 */
function* undoable<T>(name: string, q: Query<T>, inTransaction: boolean): Query<T> {
  const savepoint = inTransaction && (yield* dialect()) === 'postgres';
  // Sent on with q's first statement; the release waits, so that a failure of q's own changes comes in here.
  if (savepoint) yield* change(`SAVEPOINT ${name}`);
  try {
    const result = yield* q;
    if (savepoint) yield* exec(`RELEASE SAVEPOINT ${name}`);
    return result;
  } catch (err) {
    if (savepoint) yield* exec(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`);
    throw err;
  }
}
