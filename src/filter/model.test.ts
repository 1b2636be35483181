// The classifier's arithmetic on hand-made numbers: Robinson's f(w), the chi-square tail, Fisher's combining and
// the choice of clues; then the verdict: thresholds by model state (the cold-start rule), GTUBE, the reasons.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chi2Q, combine, PARAMS, scoreTokens, tokenProbability, type Counts } from './model.ts';
import { COLD_THRESHOLD, decide, hamPrior, MIN_TRAINED, modelState, signals, SPAM_THRESHOLD, spamReason } from './verdict.ts';

const near = (actual: number, expected: number, eps = 1e-6) => assert.ok(Math.abs(actual - expected) < eps, `${actual} is not ${expected}`);

test("f(w): Robinson's formula with SpamBayes's s = 0.45, x = 0.5", () => {
  const totals = { spam: 100, ham: 100 };
  const table: Array<[Counts, number]> = [
    [{ spam: 0, ham: 0 }, 0.5], // never seen: x
    [{ spam: 1, ham: 0 }, (0.45 * 0.5 + 1) / 1.45], // p = 1, once
    [{ spam: 0, ham: 1 }, (0.45 * 0.5) / 1.45],
    [{ spam: 10, ham: 10 }, 0.5],
    [{ spam: 30, ham: 10 }, (0.225 + 40 * 0.75) / 40.45],
  ];
  for (const [c, f] of table) near(tokenProbability(c, totals), f);
});

test('f(w): shares, not counts: a token in 10 % of 10 spam and 10 % of 100 ham is neutral', () => {
  near(tokenProbability({ spam: 1, ham: 10 }, { spam: 10, ham: 100 }), 0.5);
});

test('f(w): the ham prior pulls a token missing from few ham towards ham; from many ham it barely moves', () => {
  const c = { spam: 5, ham: 0 };
  const few = tokenProbability(c, { spam: 10, ham: 10 }, hamPrior({ spam: 10, ham: 10 }));
  const many = tokenProbability({ spam: 100, ham: 0 }, { spam: 200, ham: 200 }, hamPrior({ spam: 200, ham: 200 }));
  // 10 ham: prior 5 -> ham share 5/15 against a spam share of 1/2.
  near(few, (0.225 + 5 * (0.5 / (0.5 + 5 / 15))) / 5.45);
  assert.ok(few < 0.65, `${few}`);
  assert.ok(many > 0.99, `${many}`);
  assert.is(hamPrior({ spam: 0, ham: 0 }), 50);
  assert.is(hamPrior({ spam: 9, ham: 50 }), 1);
  assert.is(hamPrior({ spam: 9, ham: 10_000 }), 0.25);
});

test('f(w): a model that has learned no spam, or nothing, knows nothing', () => {
  near(tokenProbability({ spam: 0, ham: 3 }, { spam: 0, ham: 3 }), 0.5);
  near(tokenProbability({ spam: 1, ham: 1 }, { spam: 0, ham: 0 }), 0.5);
});

test('chi2Q: known values of the chi-square tail', () => {
  near(chi2Q(0, 2), 1);
  near(chi2Q(2, 2), Math.exp(-1)); // v = 2: e^(-x/2)
  near(chi2Q(4, 4), Math.exp(-2) * 3); // v = 4: e^(-m)(1 + m), m = 2
  near(chi2Q(9.4877, 4), 0.05, 1e-4); // the 5 % critical value for 4 degrees of freedom
  assert.ok(chi2Q(1e6, 300) >= 0 && chi2Q(1e-9, 300) <= 1);
});

test('combine: symmetric around 0.5, extreme for consistent evidence, neutral for none or conflict', () => {
  near(combine([]), 0.5);
  near(combine([0.5, 0.5, 0.5]), 0.5);
  near(combine([0.99, 0.01]), 0.5);
  near(combine([0.9, 0.8]) + combine([0.1, 0.2]), 1);
  assert.ok(combine([0.99, 0.99, 0.99, 0.99]) > 0.99);
  assert.ok(combine([0.01, 0.01, 0.01, 0.01]) < 0.01);
  // 150 clues at 0.999 do not underflow to NaN.
  const many = combine(Array(150).fill(0.999));
  assert.ok(many > 0.999 && many <= 1, String(many));
});

test('scoreTokens: clues are the tokens at least 0.1 from 0.5, strongest first, at most 150; unknown tokens are no clue', () => {
  const totals = { spam: 100, ham: 100 };
  const counts = new Map<string, Counts>([
    ['viagra', { spam: 60, ham: 0 }],
    ['meeting', { spam: 1, ham: 40 }],
    ['the', { spam: 90, ham: 90 }],
    ['slightly', { spam: 11, ham: 10 }],
  ]);
  const s = scoreTokens(['the', 'viagra', 'meeting', 'slightly', 'unknown'], counts, totals);
  assert.equal(s.clues.map((c) => c.token), ['viagra', 'meeting']);
  assert.is(s.clues[0]!.spam, 60);
  const many = new Map(Array.from({ length: 300 }, (_, i) => [`t${i}`, { spam: 50, ham: 0 }] as [string, Counts]));
  assert.is(scoreTokens([...many.keys()], many, totals).clues.length, PARAMS.maxDiscriminators);
});

test('scoreTokens: a tiny hand-made set separates its own classes', () => {
  const train = [
    { spam: true, tokens: ['cheap', 'pills', 'buy', 'now'] },
    { spam: true, tokens: ['cheap', 'watches', 'buy'] },
    { spam: true, tokens: ['pills', 'now', 'winner'] },
    { spam: false, tokens: ['meeting', 'tomorrow', 'agenda'] },
    { spam: false, tokens: ['agenda', 'notes', 'buy'] },
    { spam: false, tokens: ['lunch', 'tomorrow', 'notes'] },
  ];
  const counts = new Map<string, Counts>();
  for (const m of train) for (const t of m.tokens) {
    const c = counts.get(t) ?? { spam: 0, ham: 0 };
    if (m.spam) c.spam++;
    else c.ham++;
    counts.set(t, c);
  }
  const totals = { spam: 3, ham: 3 };
  assert.ok(scoreTokens(['cheap', 'pills', 'now'], counts, totals).score > 0.9);
  assert.ok(scoreTokens(['agenda', 'tomorrow', 'notes'], counts, totals).score < 0.1);
  near(scoreTokens(['buy'], counts, totals).score, combine([tokenProbability({ spam: 2, ham: 1 }, totals)]));
});

const tokens = (gtube = false) => ({ tokens: ['x'], gtube });
const scored = (score: number) => ({ score, clues: [{ token: 's:free', prob: 0.98, spam: 40, ham: 0 }, { token: 'agenda', prob: 0.05, spam: 0, ham: 30 }] });

test('cold start: untrained never moves mail, learning only from COLD_THRESHOLD, trained from SPAM_THRESHOLD', () => {
  const table: Array<[Counts, number, string, boolean]> = [
    [{ spam: 0, ham: 0 }, 1, 'untrained', false],
    [{ spam: 500, ham: 0 }, 1, 'untrained', false],
    [{ spam: 0, ham: 500 }, 1, 'untrained', false],
    [{ spam: 1, ham: 1 }, COLD_THRESHOLD, 'learning', true],
    [{ spam: MIN_TRAINED - 1, ham: 500 }, COLD_THRESHOLD - 0.001, 'learning', false],
    [{ spam: 500, ham: MIN_TRAINED - 1 }, SPAM_THRESHOLD, 'learning', false],
    [{ spam: MIN_TRAINED, ham: MIN_TRAINED }, SPAM_THRESHOLD, 'trained', true],
    [{ spam: MIN_TRAINED, ham: MIN_TRAINED }, SPAM_THRESHOLD - 0.001, 'trained', false],
  ];
  for (const [totals, score, state, spam] of table) {
    const v = decide(tokens(), scored(score), totals);
    assert.is(modelState(totals), state);
    assert.is(v.state, state);
    assert.is(v.spam, spam, `${JSON.stringify(totals)} at ${score}`);
    assert.is(v.threshold, state === 'untrained' ? null : state === 'learning' ? COLD_THRESHOLD : SPAM_THRESHOLD);
  }
});

test('GTUBE is spam with score 1 whatever the model, even an untrained one', () => {
  for (const totals of [{ spam: 0, ham: 0 }, { spam: 3, ham: 3 }, { spam: 900, ham: 900 }]) {
    const v = decide(tokens(true), scored(0.01), totals);
    assert.ok(v.spam && v.gtube);
    assert.is(v.score, 1);
    assert.is(signals(v)[0]!.kind, 'gtube');
    assert.match(spamReason(v), /GTUBE/);
  }
});

test('signals: the clues on the side of the verdict, in words, with the model state when it held back', () => {
  const spam = decide(tokens(), scored(0.97), { spam: 60, ham: 60 });
  assert.equal(signals(spam), [{ kind: 'content', detail: '"free" in the subject (in 40 spam, 0 not spam)', weight: 0.98 }]);
  assert.is(spamReason(spam), 'Content filter: spam score 0.97 (threshold 0.9); "free" in the subject');
  const ham = decide(tokens(), scored(0.02), { spam: 60, ham: 60 });
  assert.equal(signals(ham), [{ kind: 'content', detail: 'The word "agenda" (in 0 spam, 30 not spam)', weight: 0.05 }]);
  const learning = signals(decide(tokens(), scored(0.95), { spam: 10, ham: 3 }));
  assert.is(learning[0]!.kind, 'learning');
  assert.match(learning[0]!.detail, /still learning \(10 spam, 3 not spam; 50 of each needed\)/);
  assert.match(signals(decide(tokens(), scored(0.5), { spam: 0, ham: 0 }))[0]!.detail, /moves no mail/);
});

test.run();
