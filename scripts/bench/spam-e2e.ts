// Benchmark (part of inbound.ts, `BENCH_INBOUND_SERVERS=spam`): the spam defence end to end, as the owner of a box
// would see it. A fresh `serve` per mode (spam_filter builtin, then off), its workspace taught 200 spam + 200 ham
// of the 2002 SpamAssassin corpus through the API (each delivered, then PATCHed to its category), then the
// held-out 2002 mail delivered over SMTP one message at a time, each from the sender its Return-Path or From
// names, and each verdict read back through the API. Reported: spam caught (filed in Spam, or refused), ham
// put in Spam (or refused), and the time from the message's last line to the server's reply; beside it,
// SpamAssassin with its Bayes trained on the same 400 (spam-corpus-sa.ts) where it is installed. No DNS
// blocklist is configured: content and reputation alone. Reads only spam-1 and easy-ham-1.
import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { request } from '../../src/testkit/app.ts';
import { fmt, percentile, reportGoal, SENDER_DOMAIN, table } from './lib.ts';
import { Client, deliverable, teach, type FilterBenchDeps } from './inbound-filter.ts';
import { splitCorpus, type CorpusMessage } from './spam-corpus-data.ts';
import { spamAssassinAvailable, spamAssassinScores } from './spam-corpus-sa.ts';

type Mode = 'builtin' | 'off';
const MODES = (process.env.BENCH_SPAM_E2E_MODES ?? 'builtin,off').split(',').map((s) => s.trim()) as Mode[];

interface Outcome {
  message: CorpusMessage;
  /** `spam`, `primary`, `updates`, or `refused` (a 5xx or 4xx at any step). */
  filed: string;
  /** Final dot to reply, ms; null when refused before DATA. */
  ms: number | null;
  /** What decided, for the ham the box put in Spam: the classification's reason. */
  reason: string;
}

const ADDRESS = /^[^\s<>@"]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/;

/** The envelope sender a real client would give: the message's Return-Path, else its From, else the bench's. */
function envelopeSender(m: CorpusMessage): string {
  const head = m.raw.toString('latin1').split(/\r?\n\r?\n/, 1)[0]!;
  for (const field of ['Return-Path', 'From']) {
    const value = new RegExp(`^${field}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(head)?.[1] ?? '';
    const address = /<([^<>\s]+)>/.exec(value)?.[1] ?? /[^\s<>()"]+@[^\s<>()"]+/.exec(value)?.[0];
    if (address && ADDRESS.test(address)) return address;
  }
  return `corpus@${SENDER_DOMAIN}`;
}

async function deliverAll(deps: FilterBenchDeps, app: { smtpPort: number; api: string; key: string }, test: CorpusMessage[]): Promise<Outcome[]> {
  const client = await Client.open(app.smtpPort);
  const outcomes: Outcome[] = [];
  try {
    for (const message of test) {
      const { reply, ms } = await client.offer(envelopeSender(message), deps.inbox, deliverable(message));
      const id = /queued as (em_\S+)/.exec(reply)?.[1];
      if (!reply.startsWith('250') || !id) {
        outcomes.push({ message, filed: 'refused', ms, reason: reply.trim().split('\r\n').pop()! });
        continue;
      }
      const r = await request(`${app.api}/emails/${id}`, { key: app.key });
      if (r.status !== 200) throw new Error(`GET /emails/${id}: ${r.status} ${JSON.stringify(r.body)}`);
      const signals = (r.body.spam?.signals ?? []) as Array<{ detail: string }>;
      outcomes.push({ message, filed: r.body.category, ms, reason: `${r.body.classification}: ${signals.slice(0, 3).map((x) => x.detail).join('; ')}` });
    }
  } finally {
    client.close();
  }
  return outcomes;
}

async function runMode(deps: FilterBenchDeps, mode: Mode, train: CorpusMessage[], test: CorpusMessage[]): Promise<Outcome[]> {
  const app = await deps.startMailwright(deps.dns, '', { MAILWRIGHT_SPAM_FILTER: mode });
  try {
    await deps.setUpInbox(app, deps.dns);
    const learned = await teach(app, deps.inbox, train);
    if (learned.spam + learned.ham !== train.length) throw new Error(`the model learned ${JSON.stringify(learned)} of ${train.length}`);
    return await deliverAll(deps, app, test);
  } finally {
    await app.stop();
    rmSync(app.dataDir, { recursive: true, force: true });
  }
}

const share = (n: number, of: number) => `${n}/${of} (${fmt((100 * n) / Math.max(of, 1), 2)} %)`;
const caughtIn = (outcomes: Outcome[]) => outcomes.filter((o) => o.message.spam && (o.filed === 'spam' || o.filed === 'refused')).length;
const hamLostIn = (outcomes: Outcome[]) => outcomes.filter((o) => !o.message.spam && (o.filed === 'spam' || o.filed === 'refused')).length;

export async function benchSpamEndToEnd(deps: FilterBenchDeps): Promise<void> {
  const split = splitCorpus();
  const spamCount = split.test.filter((m) => m.spam).length;
  const hamCount = split.test.length - spamCount;
  console.log(
    `\n### Spam end to end: taught 200 spam + 200 ham through the API, then ${spamCount} spam + ${hamCount} ham held out of the 2002 corpus delivered over SMTP, ` +
      `one session, one message at a time, no DNS blocklist; ${cpus()[0]?.model ?? 'cpu'}\n`,
  );
  const rows: string[][] = [];
  for (const mode of MODES) {
    const outcomes = await runMode(deps, mode, split.train, split.test);
    const times = outcomes.map((o) => o.ms).filter((ms): ms is number => ms !== null).sort((a, b) => a - b);
    const caught = caughtIn(outcomes);
    const lost = hamLostIn(outcomes);
    const refused = outcomes.filter((o) => o.filed === 'refused').length;
    rows.push([`Mailwright, spam_filter ${mode}`, share(caught, spamCount), share(lost, hamCount), String(refused), `${fmt(percentile(times, 50), 1)} / ${fmt(percentile(times, 95), 1)} / ${fmt(times.at(-1) ?? NaN, 1)}`]);
    if (mode !== 'builtin') continue;
    reportGoal({ goal: 'spam end to end over SMTP: spam caught (2002 corpus, held out, no blocklist)', measured: fmt((100 * caught) / spamCount, 2) + ' %', target: '>= 95 %', pass: caught / spamCount >= 0.95 });
    reportGoal({ goal: 'spam end to end over SMTP: ham put in Spam (2002 corpus, held out)', measured: fmt((100 * lost) / hamCount, 2) + ' %', target: '<= 0.5 %', pass: lost / hamCount <= 0.005 });
    for (const o of outcomes.filter((x) => !x.message.spam && (x.filed === 'spam' || x.filed === 'refused'))) console.log(`- ham put in Spam: ${o.message.name}: ${o.reason}`);
  }
  if (process.env.BENCH_SPAM_SA !== '0' && spamAssassinAvailable()) {
    const sa = spamAssassinScores(split.train, split.test);
    const spam = sa.filter((s) => s.spam);
    const ham = sa.filter((s) => !s.spam);
    const ms = sa.map((s) => s.ms).sort((a, b) => a - b);
    rows.push([
      `SpamAssassin ${sa[0]?.version ?? ''} (local tests, Bayes on the same 400, score 5)`,
      share(spam.filter((s) => s.isSpam).length, spam.length),
      share(ham.filter((s) => s.isSpam).length, ham.length),
      '–',
      `${fmt(percentile(ms, 50), 1)} / ${fmt(percentile(ms, 95), 1)} / ${fmt(ms.at(-1) ?? NaN, 1)} (its check alone)`,
    ]);
  }
  table(['filter', 'spam caught (Spam or refused)', 'ham put in Spam (or refused)', 'refused', 'last line → reply, ms p50 / p95 / max'], rows);
}
