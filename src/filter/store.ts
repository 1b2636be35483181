// The content filter's state in SQLite (migration 0036): per workspace, the messages learned of each class, the
// token counts, and which emails were learned as what. Every statement names the workspace's model, so a
// workspace never scores with, or teaches, another's. Plain synchronous better-sqlite3 functions taking a Db:
// train, forget and prune write (run them on the writer thread); score only reads, with one indexed query.
import type { Db } from '../db/open.ts';
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

function modelOf(db: Db, workspaceId: string): ModelRow | undefined {
  return db.prepare('SELECT id, spam, ham, tokens, version FROM spam_filter_models WHERE workspace_id = ?').get(workspaceId) as ModelRow | undefined;
}

function ensureModel(db: Db, workspaceId: string): ModelRow {
  db.prepare('INSERT INTO spam_filter_models (workspace_id) VALUES (?) ON CONFLICT (workspace_id) DO NOTHING').run(workspaceId);
  return modelOf(db, workspaceId)!;
}

/** Distinct hashes as the JSON array json_each reads (one bound parameter, whatever the count). */
const hashList = (tokens: readonly string[]) => JSON.stringify([...new Set(tokens.map(tokenHash))]);

/** The message's verdict from its workspace's model: one indexed read of its tokens' counts. Writes nothing. */
export function score(db: Db, workspaceId: string, message: MessageTokens): Verdict {
  const model = modelOf(db, workspaceId);
  const totals: Counts = { spam: model?.spam ?? 0, ham: model?.ham ?? 0 };
  // A model that has not seen both classes cannot tell them apart: no need to read its counts.
  const state = modelState(totals);
  if (!model || state === 'untrained') return decide(message, { score: 0.5, clues: [] }, totals);
  const { tokens, hashes } = distinctHashes(message.tokens);
  // From the connection's copy of the model's counts when it has an up-to-date one, else one indexed read.
  let counts = cachedCounts(db, model, hashes);
  if (!counts) {
    const rows = db
      .prepare('SELECT token, spam, ham FROM spam_filter_tokens WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))')
      .raw()
      .all(model.id, JSON.stringify(Array.from(hashes))) as Array<[number, number, number]>;
    const index = new Map<number, number>();
    hashes.forEach((h, i) => index.set(h, i));
    counts = new Array(tokens.length);
    for (const [hash, spam, ham] of rows) counts[index.get(hash)!] = { spam, ham };
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
export function train(db: Db, input: TrainInput): { outcome: TrainOutcome; pruneDue: boolean } {
  return db.transaction(() => {
    assertEmailOf(db, input.workspaceId, input.emailId);
    const model = ensureModel(db, input.workspaceId);
    const before = db.prepare('SELECT class, source FROM spam_filter_trained WHERE email_id = ?').get(input.emailId) as { class: SpamClass; source: TrainSource } | undefined;
    const hashes = hashList(input.tokens);
    let outcome: TrainOutcome;
    if (!before) {
      add(db, model.id, input.class, hashes, input.now);
      outcome = 'learned';
    } else if (before.class === input.class) {
      // An owner confirming what the box learned by itself makes it the owner's word.
      if (input.source === 'owner' && before.source === 'auto') db.prepare("UPDATE spam_filter_trained SET source = 'owner' WHERE email_id = ?").run(input.emailId);
      return { outcome: 'unchanged' as const, pruneDue: false };
    } else if (before.source === 'owner' && input.source === 'auto') {
      return { outcome: 'kept_owner' as const, pruneDue: false };
    } else {
      subtract(db, model.id, before.class, hashes);
      add(db, model.id, input.class, hashes, input.now);
      outcome = 'moved';
    }
    db.prepare(
      `INSERT INTO spam_filter_trained (email_id, model_id, class, source, trained_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (email_id) DO UPDATE SET class = excluded.class, source = excluded.source, trained_at = excluded.trained_at`,
    ).run(input.emailId, model.id, input.class, input.source, input.now);
    const tokens = (db.prepare('SELECT tokens FROM spam_filter_models WHERE id = ?').pluck().get(model.id) as number) ?? 0;
    return { outcome, pruneDue: tokens > MAX_MODEL_TOKENS };
  })();
}

/** Forgets an email the model learned (its counts taken back). False when it had not learned it. */
export function forget(db: Db, input: { workspaceId: string; emailId: string; tokens: readonly string[] }): boolean {
  return db.transaction(() => {
    const model = modelOf(db, input.workspaceId);
    if (!model) return false;
    const before = db.prepare('SELECT class FROM spam_filter_trained WHERE email_id = ? AND model_id = ?').pluck().get(input.emailId, model.id) as SpamClass | undefined;
    if (!before) return false;
    subtract(db, model.id, before, hashList(input.tokens));
    db.prepare('DELETE FROM spam_filter_trained WHERE email_id = ?').run(input.emailId);
    return true;
  })();
}

function assertEmailOf(db: Db, workspaceId: string, emailId: string): void {
  const owner = db.prepare('SELECT workspace_id FROM emails WHERE id = ?').pluck().get(emailId);
  if (owner !== workspaceId) throw new Error(`content filter: email ${emailId} is not an email of workspace ${workspaceId}`);
}

function add(db: Db, modelId: number, cls: SpamClass, hashes: string, now: number): void {
  const day = Math.floor(now / DAY_MS);
  const [spam, ham] = cls === 'spam' ? [1, 0] : [0, 1];
  // A row whose total is 1 after the upsert was not there before: that is how the model's row count stays true.
  const totals = db
    .prepare(
      `INSERT INTO spam_filter_tokens (model_id, token, spam, ham, seen_day) SELECT ?, value, ?, ?, ? FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET spam = spam + excluded.spam, ham = ham + excluded.ham, seen_day = excluded.seen_day
       RETURNING spam + ham`,
    )
    .pluck()
    .all(modelId, spam, ham, day, hashes) as number[];
  const added = totals.reduce((n, t) => n + (t === 1 ? 1 : 0), 0);
  db.prepare(`UPDATE spam_filter_models SET ${cls} = ${cls} + 1, tokens = tokens + ?, version = random() >> 11 WHERE id = ?`).run(added, modelId);
}

function subtract(db: Db, modelId: number, cls: SpamClass, hashes: string): void {
  db.prepare(`UPDATE spam_filter_tokens SET ${cls} = max(${cls} - 1, 0) WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))`).run(modelId, hashes);
  const gone = db.prepare('DELETE FROM spam_filter_tokens WHERE model_id = ? AND token IN (SELECT value FROM json_each(?)) AND spam = 0 AND ham = 0').run(modelId, hashes).changes;
  db.prepare(`UPDATE spam_filter_models SET ${cls} = max(${cls} - 1, 0), tokens = max(tokens - ?, 0), version = random() >> 11 WHERE id = ?`).run(gone, modelId);
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
export function prune(db: Db, workspaceId: string, now: number, target = PRUNE_TO): { deleted: number; tokens: number } {
  return db.transaction(() => {
    const model = modelOf(db, workspaceId);
    if (!model) return { deleted: 0, tokens: 0 };
    const today = Math.floor(now / DAY_MS);
    let tokens = model.tokens;
    let deleted = 0;
    for (const pass of PRUNE_PASSES) {
      if (tokens <= target) break;
      const gone = db
        .prepare(
          `DELETE FROM spam_filter_tokens WHERE model_id = ? AND token IN
             (SELECT token FROM spam_filter_tokens WHERE model_id = ? AND spam + ham <= ? AND seen_day <= ? LIMIT ?)`,
        )
        .run(model.id, model.id, pass.atMost, today - pass.idleDays, tokens - target).changes;
      tokens -= gone;
      deleted += gone;
    }
    db.prepare('UPDATE spam_filter_models SET tokens = ?, pruned_at = ?, version = random() >> 11 WHERE id = ?').run(tokens, now, model.id);
    return { deleted, tokens };
  })();
}

/** What the workspace's model has learned. */
export function modelStats(db: Db, workspaceId: string): { spam: number; ham: number; tokens: number; state: ModelState } {
  const m = modelOf(db, workspaceId);
  const totals = { spam: m?.spam ?? 0, ham: m?.ham ?? 0 };
  return { ...totals, tokens: m?.tokens ?? 0, state: modelState(totals) };
}

/** What the model learned the email as, or null. */
export function trainedAs(db: Db, workspaceId: string, emailId: string): { class: SpamClass; source: TrainSource } | null {
  const row = db
    .prepare('SELECT t.class, t.source FROM spam_filter_trained t JOIN spam_filter_models m ON m.id = t.model_id WHERE t.email_id = ? AND m.workspace_id = ?')
    .get(emailId, workspaceId) as { class: SpamClass; source: TrainSource } | undefined;
  return row ?? null;
}
