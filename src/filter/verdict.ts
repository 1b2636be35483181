// What the content filter decides about one message, and how it says why: GTUBE is always spam; otherwise the
// score against a threshold that depends on how much the workspace's model has learned (the cold-start rule),
// and the clues that decided, in words an owner can read. Pure; thresholds chosen on the 2002 SpamAssassin
// corpus (scripts/bench/spam-corpus.ts): see the comments on each.
import { describeToken, type MessageTokens } from './tokens.ts';
import type { Clue, Counts, Score } from './model.ts';
import type { Signal } from './signals.ts';

export type { Signal } from './signals.ts';

/** Messages of each class the model must have learned before SPAM_THRESHOLD applies. */
export const MIN_TRAINED = 50;
/** A trained model: spam from this score up (SpamBayes's spam_cutoff is 0.90). */
export const SPAM_THRESHOLD = 0.9;
/** A model still learning (fewer than MIN_TRAINED of a class): only a score this strong moves mail. */
export const COLD_THRESHOLD = 0.99;

/**
 * The ham prior (model.ts tokenProbability): every token counts as seen in HAM_PRIOR_WEIGHT / ham-learned more
 * ham messages, at least HAM_PRIOR_FLOOR. With 10 ham learned that is 5 more, so a word missing from them says
 * almost nothing; with 50, one; from 200 on, a quarter. Without it, models of 50 of each class put up to 4 % of
 * the validation ham in Spam (a few dozen everyday words had been seen only in spam); with it, none of 13 model
 * shapes from 10 + 10 to 200 + 200, 5 samples each, put any there at SPAM_THRESHOLD (scripts/bench/spam-corpus.ts).
 */
export const HAM_PRIOR_WEIGHT = 50;
export const HAM_PRIOR_FLOOR = 0.25;

export const hamPrior = (totals: Counts) => Math.max(HAM_PRIOR_FLOOR, HAM_PRIOR_WEIGHT / Math.max(totals.ham, 1));

/**
 * `untrained`: it has not seen both classes, so it cannot tell them apart and never moves mail (GTUBE aside);
 * `learning`: fewer than MIN_TRAINED of one class; `trained`: enough of both.
 */
export type ModelState = 'untrained' | 'learning' | 'trained';

export interface Verdict {
  spam: boolean;
  /** 0 (ham) to 1 (spam); 1 for GTUBE. */
  score: number;
  /** The score from which mail is spam, or null when this model cannot move mail. */
  threshold: number | null;
  state: ModelState;
  gtube: boolean;
  /** The clues combined, strongest first. */
  clues: Clue[];
  /** Messages the model had learned of each class. */
  trained: Counts;
}

export function modelState(totals: Counts): ModelState {
  if (totals.spam === 0 || totals.ham === 0) return 'untrained';
  return totals.spam >= MIN_TRAINED && totals.ham >= MIN_TRAINED ? 'trained' : 'learning';
}

export function thresholdFor(state: ModelState): number | null {
  return state === 'trained' ? SPAM_THRESHOLD : state === 'learning' ? COLD_THRESHOLD : null;
}

export function decide(message: MessageTokens, scored: Score, totals: Counts): Verdict {
  const state = modelState(totals);
  const threshold = thresholdFor(state);
  const trained = { spam: totals.spam, ham: totals.ham };
  if (message.gtube) return { spam: true, score: 1, threshold, state, gtube: true, clues: scored.clues, trained };
  const spam = threshold !== null && scored.score >= threshold;
  return { spam, score: scored.score, threshold, state, gtube: false, clues: scored.clues, trained };
}

/**
 * The reasons worth showing: GTUBE, the model's state when it held mail back, then the strongest clues on the
 * side of the verdict (spammy ones for spam, hammy ones otherwise), at most `max` of them.
 */
export function signals(v: Verdict, max = 5): Signal[] {
  const out: Signal[] = [];
  if (v.gtube) out.push({ kind: 'gtube', detail: 'The message contains the GTUBE anti-spam test string', weight: 1 });
  if (v.state !== 'trained') {
    out.push({
      kind: 'learning',
      detail:
        v.state === 'untrained'
          ? `The content filter has not learned both spam and non-spam yet (${v.trained.spam} spam, ${v.trained.ham} not spam): it moves no mail`
          : `The content filter is still learning (${v.trained.spam} spam, ${v.trained.ham} not spam; ${MIN_TRAINED} of each needed): it moves mail only from a score of ${COLD_THRESHOLD}`,
      weight: 0,
    });
  }
  const side = v.spam || (!v.gtube && v.score >= 0.5) ? (c: Clue) => c.prob > 0.5 : (c: Clue) => c.prob < 0.5;
  for (const c of v.clues) {
    if (out.length >= max) break;
    if (side(c)) out.push({ kind: 'content', detail: `${capitalise(describeToken(c.token))} (in ${c.spam} spam, ${c.ham} not spam)`, weight: round(c.prob) });
  }
  return out;
}

/** The classification reason for mail the filter put in spam, naming the deciding signals. */
export function spamReason(v: Verdict): string {
  if (v.gtube) return 'Content filter: the message contains the GTUBE anti-spam test string';
  const top = v.clues.filter((c) => c.prob > 0.5).slice(0, 3).map((c) => describeToken(c.token));
  return `Content filter: spam score ${round(v.score)} (threshold ${v.threshold})${top.length ? `; ${top.join(', ')}` : ''}`;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
