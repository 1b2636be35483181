// judge(): one verdict from the content score, the door's evidence, the sender's reputation and the owner's
// lists. Table tests of what decides, the score and threshold the email record shows, and the reason's words.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judge, type JudgeInput } from './combine.ts';
import { decide, type Verdict } from './verdict.ts';
import type { Signal } from './signals.ts';
import { FIRST_CONTACT } from './history.ts';

const TRAINED = { spam: 200, ham: 200 };
const LEARNING = { spam: 20, ham: 30 };

/** A verdict of a model that learned `trained`, scoring `score` with clues for the given tokens. */
function verdict(score: number, trained = TRAINED, gtube = false, tokens: Array<[string, number]> = [['viagra', 0.99], ['s:free', 0.97], ['meeting', 0.02]]): Verdict {
  const clues = tokens.map(([token, prob]) => ({ token, prob, spam: prob > 0.5 ? 40 : 1, ham: prob > 0.5 ? 1 : 40 }));
  return decide({ tokens: tokens.map(([t]) => t), gtube }, { score, clues }, trained);
}

const firstContact: Signal = { kind: 'reputation', detail: FIRST_CONTACT, weight: 0.5 };
const wrote: Signal = { kind: 'reputation', detail: 'You wrote to this sender before', weight: 0.05 };
const listed: Signal = { kind: 'dnsbl', detail: 'listed in zen.spamhaus.org', weight: 0.995 };

const base: JudgeInput = { content: null, reputation: firstContact, list: null };

test('a trained model: spam from 0.9, the reason names the content score and the words that decided', () => {
  const j = judge({ ...base, content: verdict(0.97) });
  assert.is(j.spam, 'Content score 0.97 (threshold 0.9): words your Spam folder taught: the word "viagra", "free" in the subject');
  assert.is(j.record.score, 0.97);
  assert.is(j.record.threshold, 0.9);
  assert.equal(j.record.signals.map((s) => s.kind), ['reputation', 'content', 'content', 'content']);
  assert.equal(j.record.signals[1], { kind: 'content', detail: 'Content score 0.97, from what 200 spam and 200 other messages taught', weight: 0.97 });
  assert.equal(j.record.signals[2], { kind: 'content', detail: 'The word "viagra" (in 40 spam, 1 not spam)', weight: 0.99 });
  const ham = judge({ ...base, content: verdict(0.4) });
  assert.equal([ham.spam, ham.keptOut, ham.gtube, ham.blocked], [null, null, null, null]);
  assert.is(ham.record.score, 0.4);
});

test('a model still learning moves mail only from 0.99, and says so among the signals', () => {
  const j = judge({ ...base, content: verdict(0.98, LEARNING) });
  assert.is(j.spam, null);
  assert.is(j.record.threshold, 0.99);
  assert.ok(j.record.signals.some((s) => s.kind === 'learning' && s.weight === 0 && s.detail.includes('still learning (20 spam, 30 not spam; 50 of each needed)')), JSON.stringify(j.record.signals));
  assert.ok(judge({ ...base, content: verdict(0.995, LEARNING) }).spam?.startsWith('Content score 0.995 (threshold 0.99)'));
});

test('an untrained model weighs nothing: only strong door evidence moves mail, named in the reason', () => {
  const untrained = verdict(0.5, { spam: 0, ham: 3 });
  const quiet = judge({ ...base, content: untrained });
  assert.is(quiet.spam, null);
  assert.is(quiet.record.score, 0.5);
  assert.is(quiet.record.threshold, 0.99);
  const door = judge({ ...base, content: untrained, evidence: [listed] });
  assert.is(door.spam, 'Listed in zen.spamhaus.org (spam score 0.995, threshold 0.99)');
  assert.is(door.record.signals[0], listed);
  // Weaker evidence alone does not.
  assert.is(judge({ ...base, content: untrained, evidence: [{ kind: 'helo', detail: 'HELO is a bare IP address', weight: 0.8 }] }).spam, null);
});

test('evidence adds up as log-odds: the door and the content together, the stronger one named', () => {
  const j = judge({ ...base, content: verdict(0.8), evidence: [{ kind: 'rdns', detail: 'the client has no reverse DNS', weight: 0.75 }] });
  assert.is(j.record.score, 0.923);
  assert.is(j.spam, 'Content score 0.8 (threshold 0.9): words your Spam folder taught: the word "viagra", "free" in the subject; spam score with the other signals 0.923');
  const door = judge({ ...base, content: verdict(0.7), evidence: [listed] });
  assert.ok(door.spam?.startsWith('Listed in zen.spamhaus.org (spam score 0.998'), door.spam ?? '');
});

test('history leans to ham: mail the score alone would put in Spam stays out, and the reason says why', () => {
  const j = judge({ ...base, content: verdict(0.95), reputation: wrote });
  assert.is(j.spam, null);
  assert.is(j.keptOut, 'kept out of Spam: you wrote to this sender before');
  assert.is(j.record.score, 0.5);
  // A first contact leans to neither side: the content decides.
  assert.ok(judge({ ...base, content: verdict(0.95) }).spam);
  // Clear spam from a correspondent still goes to Spam (a hijacked account).
  assert.ok(judge({ ...base, content: verdict(0.99999), reputation: wrote }).spam);
});

test('the allow list keeps any score out of Spam; GTUBE and the block list decide outright', () => {
  const allow = { list: 'allow' as const, entry: 'friend.example', kind: 'domain' as const };
  const allowed = judge({ ...base, content: verdict(0.99999), list: allow });
  assert.is(allowed.spam, null);
  assert.is(allowed.keptOut, 'kept out of Spam: friend.example is on your allow list');
  assert.ok(allowed.record.signals.some((s) => s.kind === 'allow' && s.weight === 0));
  assert.is(judge({ ...base, content: verdict(0.1), list: allow }).keptOut, null);

  const gtube = judge({ ...base, content: verdict(0.5, TRAINED, true), list: allow });
  assert.is(gtube.gtube, 'GTUBE: the message carries the anti-spam test string, which is always spam');
  assert.is(gtube.record.score, 1);
  assert.is(gtube.record.signals[0]!.kind, 'gtube');

  const blocked = judge({ ...base, content: verdict(0.01), reputation: wrote, list: { list: 'block', entry: 'a@spam.example', kind: 'address' } });
  assert.is(blocked.blocked, 'Blocked: a@spam.example is on your block list');
  assert.equal(blocked.record.signals[0], { kind: 'block', detail: 'a@spam.example is on your block list', weight: 1 });
});

test('without a content verdict: the door still counts, a failure is noted, malformed evidence is left out', () => {
  const failed = judge({ ...base, contentProblem: 'its model could not be read' });
  assert.equal(failed.record, {
    score: 0.5,
    threshold: 0.99,
    signals: [firstContact, { kind: 'content', detail: 'The content filter could not judge this message (its model could not be read): filed without a content verdict', weight: 0.5 }],
  });
  const odd = [{ kind: 'dnsbl', detail: 'x', weight: 7 }, null, { kind: 'uribl' }, listed] as unknown as Signal[];
  const j = judge({ ...base, evidence: odd });
  assert.equal(j.record.signals.filter((s) => s.kind !== 'reputation'), [listed]);
  assert.ok(j.spam?.startsWith('Listed in zen.spamhaus.org'));
  // Absent evidence counts as none.
  assert.equal(judge({ ...base, evidence: undefined }).record.signals, [firstContact]);
});

test.run();
