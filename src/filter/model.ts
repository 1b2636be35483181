// The classifier's arithmetic: a token's spam probability from its counts, and the message's score from its
// tokens' probabilities, as SpamBayes does it (Gary Robinson, "A Statistical Approach to the Spam Problem",
// Linux Journal 107, 2003; SpamBayes classifier.py): Robinson's f(w) with a prior for rare tokens, then
// Fisher's chi-square combining of the strongest clues into two tests (spammy, hammy) whose difference is the
// score. One change from SpamBayes, the ham prior (tokenProbability), measured on the 2002 corpus: small or
// lopsided models put no ham in Spam with it. Pure: counts in, numbers out; no database.

export interface Counts {
  /** Messages trained as spam (ham) that had the token; for the totals, messages trained as spam (ham). */
  spam: number;
  ham: number;
}

/** SpamBayes's defaults (Options.py), kept: they were tuned on large corpora and held on ours (the benchmark). */
export const PARAMS = {
  /** s: how much weight the prior has against the evidence of a token seen n times. */
  unknownWordStrength: 0.45,
  /** x: the probability assumed for a token never seen. */
  unknownWordProb: 0.5,
  /** Tokens whose probability is within this of 0.5 are not clues. */
  minimumProbStrength: 0.1,
  /** At most this many of the strongest clues are combined. */
  maxDiscriminators: 150,
} as const;

export interface Clue {
  token: string;
  /** f(w): the token's spam probability, 0 (ham) to 1 (spam). */
  prob: number;
  spam: number;
  ham: number;
}

export interface Score {
  /** 0 (ham) to 1 (spam); 0.5 when nothing is known. */
  score: number;
  /** The clues combined, strongest first. */
  clues: Clue[];
}

/**
 * Robinson's f(w) = (s·x + n·p(w)) / (s + n), p(w) = spam share / (spam share + ham share), each share the part
 * of that class's learned messages that had the token. `hamPrior` (the cold-start rule, verdict.ts) counts every
 * token as present in that many more ham messages: a model that saw few ham cannot know that a word missing from
 * them is rare in ham, so it gives such words less weight as spam evidence; 0 is SpamBayes's p(w).
 */
export function tokenProbability(c: Counts, totals: Counts, hamPrior = 0): number {
  const n = c.spam + c.ham;
  if (n === 0 || totals.spam === 0 || totals.ham + hamPrior === 0) return PARAMS.unknownWordProb;
  // Counts can pass the totals only after untraining a message learned before a prune: capped.
  const spamShare = Math.min(c.spam, totals.spam) / totals.spam;
  const hamShare = (Math.min(c.ham, totals.ham) + hamPrior) / (totals.ham + hamPrior);
  if (spamShare + hamShare === 0) return PARAMS.unknownWordProb;
  const p = spamShare / (spamShare + hamShare);
  const s = PARAMS.unknownWordStrength;
  return (s * PARAMS.unknownWordProb + n * p) / (s + n);
}

/** P(chi² ≥ x2) for v degrees of freedom (v even): the series of the regularized gamma function. */
export function chi2Q(x2: number, v: number): number {
  const m = x2 / 2;
  let term = Math.exp(-m);
  let sum = term;
  for (let i = 1; i < v / 2; i++) {
    term *= m / i;
    sum += term;
  }
  return Math.min(sum, 1);
}

/**
 * Fisher's combining: S says how unlikely the probabilities are if the message were not spam, H if it were not
 * ham; the score is (S - H + 1) / 2. Logs are summed, not products taken, so 150 small numbers do not underflow.
 */
export function combine(probs: readonly number[]): number {
  const n = probs.length;
  if (n === 0) return 0.5;
  let lnHam = 0;
  let lnSpam = 0;
  for (const p of probs) {
    lnHam += Math.log(p);
    lnSpam += Math.log(1 - p);
  }
  const s = 1 - chi2Q(-2 * lnSpam, 2 * n);
  const h = 1 - chi2Q(-2 * lnHam, 2 * n);
  return (s - h + 1) / 2;
}

/** The message's score from the counts of its tokens (a token missing from `counts` was never trained). */
export function scoreTokens(tokens: readonly string[], counts: ReadonlyMap<string, Counts>, totals: Counts, hamPrior = 0): Score {
  return scoreCounted(tokens, (i) => counts.get(tokens[i]!), totals, hamPrior);
}

/**
 * scoreTokens over the message's tokens with their counts read by index (`countsAt(i)`, undefined for a token
 * never trained): what the store scores with, without a map of strings to build for each message.
 */
export function scoreCounted(tokens: readonly string[], countsAt: (i: number) => Counts | undefined, totals: Counts, hamPrior = 0): Score {
  const probs: number[] = [];
  const strengths: number[] = [];
  const at: number[] = [];
  const found: Array<Counts> = [];
  for (let i = 0; i < tokens.length; i++) {
    const c = countsAt(i);
    if (!c) continue;
    const prob = tokenProbability(c, totals, hamPrior);
    const strength = Math.abs(prob - 0.5);
    if (strength < PARAMS.minimumProbStrength) continue;
    probs.push(prob);
    strengths.push(strength);
    at.push(i);
    found.push(c);
  }
  // Strongest first; ties broken by token, so a verdict does not depend on the order the database returned the rows in.
  const order = probs.map((_, k) => k);
  order.sort((a, b) => strengths[b]! - strengths[a]! || (tokens[at[a]!]! < tokens[at[b]!]! ? -1 : tokens[at[a]!]! > tokens[at[b]!]! ? 1 : 0));
  const used = order.slice(0, PARAMS.maxDiscriminators);
  return {
    score: combine(used.map((k) => probs[k]!)),
    clues: used.map((k) => ({ token: tokens[at[k]!]!, prob: probs[k]!, spam: found[k]!.spam, ham: found[k]!.ham })),
  };
}
