// The content filter's state in SQLite (migration 0036): per workspace, the messages learned of each class, the
// token counts, and which emails were learned as what. Every statement names the workspace's model, so a
// workspace never scores with, or teaches, another's. Queries (db/query.ts): train, forget and prune write (run
// them on the writer thread); score only reads, with one indexed query.
import { all, column, get, run, value, type Query } from '../db/query.ts';
import { scoreCounted, type Counts } from './model.ts';
import type { MessageTokens } from './tokens.ts';
import { decide, hamPrior, modelState, type ModelState, type Verdict } from './verdict.ts';
import { cachedCounts } from './counts-cache.ts';

export type SpamClass = 'spam' | 'ham';
/** `owner`: the owner said so (a correction); `auto`: the box decided to learn it. An owner's word is never undone by `auto`. */
export type TrainSource = 'owner' | 'auto';

/** Token rows a workspace's model may hold before pruning is due; pruning brings it back to PRUNE_TO. */
export const MAX_MODEL_TOKENS = 400_000;
export const PRUNE_TO = 320_000;

const DAY_MS = 86_400_000;

/**
 * The stored key of a token: a 47-bit hash (cyrb53's mixing, public domain, by bryc), which SQLite keeps in 6
 * bytes. Collisions (about one pair among a million tokens) only merge two tokens' counts. Changing this
 * function forgets every model: never change it without a migration that clears spam_filter_*.
 */
export function tokenHash(token: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < token.length; i++) {
    const ch = token.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 & 0x7fff) * 2 ** 32 + (h1 >>> 0);
}

interface ModelRow {
  id: number;
  spam: number;
  ham: number;
  tokens: number;
  /**
   * Drawn anew (a random 53-bit number) at every change of its counts (0037): what a copy of them in memory is
   * checked against (counts-cache.ts). Random, not a counter, so a change rolled back and another one after it
   * never share a version.
   */
  version: number;
}

const modelOf = (workspaceId: string) => get<ModelRow>('SELECT id, spam, ham, tokens, version FROM spam_filter_models WHERE workspace_id = ?', workspaceId);

function* ensureModel(workspaceId: string): Query<ModelRow> {
  yield* run('INSERT INTO spam_filter_models (workspace_id) VALUES (?) ON CONFLICT (workspace_id) DO NOTHING', workspaceId);
  return (yield* modelOf(workspaceId))!;
}

/** Distinct hashes as the JSON array json_each reads (one bound parameter, whatever the count). */
const hashList = (tokens: readonly string[]) => JSON.stringify([...new Set(tokens.map(tokenHash))]);

/** The message's verdict from its workspace's model: one indexed read of its tokens' counts. Writes nothing. */
export function* score(workspaceId: string, message: MessageTokens): Query<Verdict> {
  const model = yield* modelOf(workspaceId);
  const totals: Counts = { spam: model?.spam ?? 0, ham: model?.ham ?? 0 };
  // A model that has not seen both classes cannot tell them apart: no need to read its counts.
  const state = modelState(totals);
  if (!model || state === 'untrained') return decide(message, { score: 0.5, clues: [] }, totals);
  const { tokens, hashes } = distinctHashes(message.tokens);
  // From the thread's copy of the model's counts when it has an up-to-date one, else one indexed read.
  let counts = yield* cachedCounts(model, hashes);
  if (!counts) {
    const rows = yield* all<{ token: number; spam: number; ham: number }>(
      'SELECT token, spam, ham FROM spam_filter_tokens WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))',
      model.id,
      JSON.stringify(Array.from(hashes)),
    );
    const index = new Map<number, number>();
    hashes.forEach((h, i) => index.set(h, i));
    counts = new Array(tokens.length);
    for (const { token, spam, ham } of rows) counts[index.get(token)!] = { spam, ham };
  }
  const found = counts;
  return decide(message, scoreCounted(tokens, (i) => found[i], totals, hamPrior(totals)), totals);
}

/**
 * The tokens with their hashes, each hash once (the first token that has it: a hash names one row). A message's
 * tokens are distinct already and two of them rarely share a hash, so that is checked on a sorted copy first.
 */
function distinctHashes(all: readonly string[]): { tokens: readonly string[]; hashes: Float64Array } {
  const hashes = Float64Array.from(all, tokenHash);
  const sorted = hashes.slice().sort();
  let shared = false;
  for (let i = 1; i < sorted.length && !shared; i++) shared = sorted[i] === sorted[i - 1];
  if (!shared) return { tokens: all, hashes };
  const seen = new Set<number>();
  const tokens: string[] = [];
  const kept: number[] = [];
  all.forEach((token, i) => {
    if (seen.has(hashes[i]!)) return;
    seen.add(hashes[i]!);
    tokens.push(token);
    kept.push(hashes[i]!);
  });
  return { tokens, hashes: Float64Array.from(kept) };
}

export interface TrainInput {
  workspaceId: string;
  /** A received email of this workspace (refused otherwise). */
  emailId: string;
  class: SpamClass;
  /** The message's tokens (messageTokens(parsed).tokens): the same each time the same message is given. */
  tokens: readonly string[];
  source: TrainSource;
  now: number;
}

/**
 * `learned`: new to the model; `moved`: it had been learned as the other class and now counts as this one;
 * `unchanged`: already learned as this class; `kept_owner`: the owner had said otherwise, an `auto` call changes nothing.
 */
export type TrainOutcome = 'learned' | 'moved' | 'unchanged' | 'kept_owner';

/** Teaches the workspace's model that the email is spam or ham. `pruneDue`: run prune() (a job of its own). */
export function* train(input: TrainInput): Query<{ outcome: TrainOutcome; pruneDue: boolean }> {
  yield* assertEmailOf(input.workspaceId, input.emailId);
  const model = yield* ensureModel(input.workspaceId);
  const before = yield* get<{ class: SpamClass; source: TrainSource }>('SELECT class, source FROM spam_filter_trained WHERE email_id = ?', input.emailId);
  const hashes = hashList(input.tokens);
  let outcome: TrainOutcome;
  if (!before) {
    yield* add(model.id, input.class, hashes, input.now);
    outcome = 'learned';
  } else if (before.class === input.class) {
    // An owner confirming what the box learned by itself makes it the owner's word.
    if (input.source === 'owner' && before.source === 'auto') yield* run("UPDATE spam_filter_trained SET source = 'owner' WHERE email_id = ?", input.emailId);
    return { outcome: 'unchanged' as const, pruneDue: false };
  } else if (before.source === 'owner' && input.source === 'auto') {
    return { outcome: 'kept_owner' as const, pruneDue: false };
  } else {
    yield* subtract(model.id, before.class, hashes);
    yield* add(model.id, input.class, hashes, input.now);
    outcome = 'moved';
  }
  yield* run(
    `INSERT INTO spam_filter_trained (email_id, model_id, class, source, trained_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (email_id) DO UPDATE SET class = excluded.class, source = excluded.source, trained_at = excluded.trained_at`,
    input.emailId, model.id, input.class, input.source, input.now,
  );
  const tokens = (yield* value<number>('SELECT tokens FROM spam_filter_models WHERE id = ?', model.id)) ?? 0;
  return { outcome, pruneDue: tokens > MAX_MODEL_TOKENS };
}

/** Forgets an email the model learned (its counts taken back). False when it had not learned it. */
export function* forget(input: { workspaceId: string; emailId: string; tokens: readonly string[] }): Query<boolean> {
  const model = yield* modelOf(input.workspaceId);
  if (!model) return false;
  const before = yield* value<SpamClass>('SELECT class FROM spam_filter_trained WHERE email_id = ? AND model_id = ?', input.emailId, model.id);
  if (!before) return false;
  yield* subtract(model.id, before, hashList(input.tokens));
  yield* run('DELETE FROM spam_filter_trained WHERE email_id = ?', input.emailId);
  return true;
}

function* assertEmailOf(workspaceId: string, emailId: string): Query<void> {
  const owner = yield* value<string>('SELECT workspace_id FROM emails WHERE id = ?', emailId);
  if (owner !== workspaceId) throw new Error(`content filter: email ${emailId} is not an email of workspace ${workspaceId}`);
}

function* add(modelId: number, cls: SpamClass, hashes: string, now: number): Query<void> {
  const day = Math.floor(now / DAY_MS);
  const [spam, ham] = cls === 'spam' ? [1, 0] : [0, 1];
  // A row whose total is 1 after the upsert was not there before: that is how the model's row count stays true.
  const totals = yield* column<number>(
    `INSERT INTO spam_filter_tokens (model_id, token, spam, ham, seen_day) SELECT ?, value, ?, ?, ? FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET spam = spam_filter_tokens.spam + excluded.spam, ham = spam_filter_tokens.ham + excluded.ham, seen_day = excluded.seen_day
       RETURNING spam + ham`,
    modelId, spam, ham, day, hashes,
  );
  const added = totals.reduce((n, t) => n + (t === 1 ? 1 : 0), 0);
  yield* run(`UPDATE spam_filter_models SET ${cls} = ${cls} + 1, tokens = tokens + ?, version = random() >> 11 WHERE id = ?`, added, modelId);
}

function* subtract(modelId: number, cls: SpamClass, hashes: string): Query<void> {
  yield* run(`UPDATE spam_filter_tokens SET ${cls} = max(${cls} - 1, 0) WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))`, modelId, hashes);
  const gone = yield* run('DELETE FROM spam_filter_tokens WHERE model_id = ? AND token IN (SELECT value FROM json_each(?)) AND spam = 0 AND ham = 0', modelId, hashes);
  yield* run(`UPDATE spam_filter_models SET ${cls} = max(${cls} - 1, 0), tokens = max(tokens - ?, 0), version = random() >> 11 WHERE id = ?`, gone, modelId);
}

/**
 * Passes of pruning, in order, each deleting only what is still over PRUNE_TO: tokens seen in one message and
 * not learned for a week, then in two and not for a month, then three and a quarter; only then rare tokens
 * however recent. A token that matters (seen in many messages) is never pruned.
 */
const PRUNE_PASSES: ReadonlyArray<{ atMost: number; idleDays: number }> = [
  { atMost: 1, idleDays: 7 },
  { atMost: 2, idleDays: 30 },
  { atMost: 3, idleDays: 90 },
  { atMost: 1, idleDays: 0 },
  { atMost: 2, idleDays: 0 },
  { atMost: 3, idleDays: 0 },
];

/** Brings the workspace's model back under PRUNE_TO token rows (or `target`), rarest and stalest first. */
export function* prune(workspaceId: string, now: number, target = PRUNE_TO): Query<{ deleted: number; tokens: number }> {
  const model = yield* modelOf(workspaceId);
  if (!model) return { deleted: 0, tokens: 0 };
  const today = Math.floor(now / DAY_MS);
  let tokens = model.tokens;
  let deleted = 0;
  for (const pass of PRUNE_PASSES) {
    if (tokens <= target) break;
    const gone = yield* run(
      `DELETE FROM spam_filter_tokens WHERE model_id = ? AND token IN
         (SELECT token FROM spam_filter_tokens WHERE model_id = ? AND spam + ham <= ? AND seen_day <= ? LIMIT ?)`,
      model.id, model.id, pass.atMost, today - pass.idleDays, tokens - target,
    );
    tokens -= gone;
    deleted += gone;
  }
  yield* run('UPDATE spam_filter_models SET tokens = ?, pruned_at = ?, version = random() >> 11 WHERE id = ?', tokens, now, model.id);
  return { deleted, tokens };
}

/** What the workspace's model has learned. */
export function* modelStats(workspaceId: string): Query<{ spam: number; ham: number; tokens: number; state: ModelState }> {
  const m = yield* modelOf(workspaceId);
  const totals = { spam: m?.spam ?? 0, ham: m?.ham ?? 0 };
  return { ...totals, tokens: m?.tokens ?? 0, state: modelState(totals) };
}

/** What the model learned the email as, or null. */
export function* trainedAs(workspaceId: string, emailId: string): Query<{ class: SpamClass; source: TrainSource } | null> {
  const row = yield* get<{ class: SpamClass; source: TrainSource }>(
    'SELECT t.class, t.source FROM spam_filter_trained t JOIN spam_filter_models m ON m.id = t.model_id WHERE t.email_id = ? AND m.workspace_id = ?',
    emailId,
    workspaceId,
  );
  return row ?? null;
}
