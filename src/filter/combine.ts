// One spam verdict from every piece of evidence about a received message: the content filter's score, the
// door's evidence (blocklists, reverse DNS, HELO, rspamd: receive/analysed.ts `evidence`), the sender's
// reputation and the owner's allow and block lists. GTUBE and the block list decide outright; the allow list
// keeps mail out of Spam whatever the score; everything else is summed as independent evidence (log-odds, as
// naive Bayes does) into one score held against the threshold the content model's state sets (verdict.ts).
// Pure. The rules that come before any score (an SPF or DMARC failure, a sender the owner marked) are
// receive/classify.ts's, which takes this judgement.
import { describeToken } from './tokens.ts';
import { COLD_THRESHOLD, signals as contentSignals, type Verdict } from './verdict.ts';
import type { Signal } from './signals.ts';
import type { ListMatch } from './lists.ts';

/** The email record's `spam` (DESIGN.md "spam verdict"). */
export interface SpamRecord {
  /** The combined score, 0 (ham) to 1 (spam); 1 for GTUBE. */
  score: number;
  /** Mail scoring this or more goes to Spam (unless a rule decided otherwise: see the signals). */
  threshold: number;
  /** The deciding signal first, then the rest, strongest first. */
  signals: Signal[];
}

export interface JudgeInput {
  /** The content filter's verdict; null when it did not run (spam_filter off) or failed (`contentProblem`). */
  content: Verdict | null;
  contentProblem?: string | null;
  /** The door's evidence, as handed over with the analysis (absent: none). */
  evidence?: readonly Signal[];
  reputation: Signal | null;
  /** The list entry that covers the From address, or for the block list the envelope sender. */
  list: ListMatch | null;
}

export interface Judgement {
  /** The reason when GTUBE decided (always spam). */
  gtube: string | null;
  /** The reason when the block list decided (always spam). */
  blocked: string | null;
  /** The reason when the score put it in Spam, naming the signal that weighed most. */
  spam: string | null;
  /** A note when the score alone would have been spam but the allow list or a sender's history kept it out. */
  keptOut: string | null;
  record: SpamRecord;
}

/** Content scores are held within this of 0 and 1, so one word of evidence can still be weighed against them. */
const CONTENT_CLAMP = 1e-4;
/** Any other signal is held within this: none outweighs a confident content score on its own (logit 6.9 against 9.2). */
const SIGNAL_CLAMP = 0.001;

const logit = (p: number, clamp: number) => {
  const q = Math.min(1 - clamp, Math.max(clamp, p));
  return Math.log(q / (1 - q));
};
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const round = (x: number) => Math.round(x * 1000) / 1000;
const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const lower = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

export function judge(input: JudgeInput): Judgement {
  const { content, list, reputation } = input;
  const evidence = (input.evidence ?? []).filter(isSignal);
  // Without a content model that has learned both classes, only strong evidence moves mail (the cold-start rule).
  const threshold = content?.threshold ?? COLD_THRESHOLD;
  // Weight 0 marks a note that only explains (signals.ts): it weighs nothing.
  const weighed = [...evidence, ...(reputation ? [reputation] : [])];
  const parts = weighed.map((s) => (s.weight > 0 ? logit(s.weight, SIGNAL_CLAMP) : 0));
  const contentPart = content && content.state !== 'untrained' ? logit(content.score, CONTENT_CLAMP) : 0;
  const total = contentPart + parts.reduce((a, b) => a + b, 0);
  const raw = content?.gtube ? 1 : sigmoid(total);
  const score = round(raw);
  const spamSide = parts.reduce((a, b) => a + Math.max(b, 0), Math.max(contentPart, 0));
  const wouldBeSpam = sigmoid(spamSide) >= threshold;

  const listSignal: Signal | null = list ? { kind: list.list, detail: `${list.entry} is on your ${list.list} list`, weight: list.list === 'block' ? 1 : 0 } : null;
  const signals: Signal[] = [
    ...(list?.list === 'block' ? [listSignal!] : []),
    ...(content?.gtube ? [contentSignals(content)[0]!] : []),
    ...evidence,
    ...(reputation ? [reputation] : []),
    ...(list?.list === 'allow' ? [listSignal!] : []),
    ...contentPartSignals(content, input.contentProblem ?? null),
  ];
  const record: SpamRecord = { score, threshold, signals };

  const gtube = content?.gtube ? 'GTUBE: the message carries the anti-spam test string, which is always spam' : null;
  const blocked = list?.list === 'block' ? `Blocked: ${list.entry} is on your block list` : null;
  if (gtube || blocked) return { gtube, blocked, spam: null, keptOut: null, record };

  const allowed = list?.list === 'allow' ? `kept out of Spam: ${list.entry} is on your allow list` : null;
  if (raw >= threshold && !allowed) return { gtube, blocked, spam: spamReason(score, threshold, content, contentPart, evidence, parts.slice(0, evidence.length)), keptOut: null, record };
  if (!wouldBeSpam) return { gtube, blocked, spam: null, keptOut: null, record };
  // It would have been spam: the allow list, or the strongest ham-leaning signal, kept it out.
  const hammy = weighed.map((s, i) => ({ s, part: parts[i]! })).filter((x) => x.part < 0).sort((a, b) => a.part - b.part)[0]?.s;
  return { gtube, blocked, spam: null, keptOut: allowed ?? (hammy ? `kept out of Spam: ${lower(hammy.detail)}` : null), record };
}

/** The reason for mail the score put in Spam: the content's clues, or the door's signal, whichever weighed most. */
function spamReason(score: number, threshold: number, content: Verdict | null, contentPart: number, evidence: readonly Signal[], parts: readonly number[]): string {
  let top = -1;
  for (let i = 0; i < evidence.length; i++) if (parts[i]! > (top < 0 ? contentPart : parts[top]!)) top = i;
  if (top >= 0 || !content) {
    const signal = evidence[Math.max(top, 0)];
    return `${capitalise(signal?.detail ?? 'Spam evidence')} (spam score ${score}, threshold ${threshold})`;
  }
  const clues = content.clues.filter((c) => c.prob > 0.5).slice(0, 3).map((c) => describeToken(c.token));
  const suffix = score === round(content.score) ? '' : `; spam score with the other signals ${score}`;
  return `Content score ${round(content.score)} (threshold ${threshold}): words your Spam folder taught${clues.length ? `: ${clues.join(', ')}` : ''}${suffix}`;
}

/** The content filter's part of the signals: its score, its strongest clues and whether it is still learning. */
function contentPartSignals(content: Verdict | null, problem: string | null): Signal[] {
  if (!content) return problem ? [{ kind: 'content', detail: `The content filter could not judge this message (${problem}): filed without a content verdict`, weight: 0.5 }] : [];
  const out: Signal[] = [];
  if (content.state !== 'untrained' && !content.gtube) {
    out.push({ kind: 'content', detail: `Content score ${round(content.score)}, from what ${content.trained.spam} spam and ${content.trained.ham} other messages taught`, weight: round(content.score) });
  }
  // signals() puts GTUBE first (listed above already), then the learning note and the strongest clues.
  return [...out, ...contentSignals(content, 6).filter((s) => s.kind !== 'gtube')];
}

/** Evidence handed over from elsewhere is checked before it is weighed: a malformed one is left out, never fatal. */
function isSignal(s: unknown): s is Signal {
  const x = s as Signal | null;
  return !!x && typeof x.kind === 'string' && typeof x.detail === 'string' && typeof x.weight === 'number' && x.weight >= 0 && x.weight <= 1;
}
