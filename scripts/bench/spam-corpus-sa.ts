// SpamAssassin on the content-filter benchmark's held-out mail, for comparison: local tests only (no network),
// its Bayes trained with sa-learn on the same 400 messages into a temporary Bayes database, scored by one Perl
// process through Mail::SpamAssassin (one start, not one per message). Uses the installed spamassassin and its
// rules as they are; installs nothing.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir } from './lib.ts';
import type { CorpusMessage } from './spam-corpus-data.ts';

export const spamAssassinAvailable = () => existsSync('/usr/bin/spamassassin') && existsSync('/usr/bin/sa-learn');

export interface SaResult {
  name: string;
  spam: boolean;
  score: number;
  isSpam: boolean;
  ms: number;
  version: string;
}

const CHECK = `
use strict; use warnings;
use Mail::SpamAssassin; use Time::HiRes qw(time);
my ($site, $state, $list) = @ARGV;
my $sa = Mail::SpamAssassin->new({ site_rules_filename => $site, userprefs_filename => "$state/user_prefs",
  userstate_dir => $state, local_tests_only => 1, dont_copy_prefs => 1 });
$sa->init(1);
open(my $fh, '<', $list) or die $!;
while (my $file = <$fh>) {
  chomp $file;
  open(my $m, '<:raw', $file) or die $!; local $/; my $text = <$m>; close $m;
  my $t0 = time; my $mail = $sa->parse($text); my $status = $sa->check($mail);
  printf "%s\\t%.2f\\t%d\\t%.1f\\t%s\\n", $file, $status->get_score, $status->is_spam ? 1 : 0, (time - $t0) * 1000, Mail::SpamAssassin::Version();
  $status->finish; $mail->finish;
}
`;

/** Scores `test` (or a fixed sample of `sample` of each class, when given) after sa-learn on `train`. */
export function spamAssassinScores(train: readonly CorpusMessage[], test: readonly CorpusMessage[], sample = 0): SaResult[] {
  const dir = benchDir('mw-bench-sa-');
  try {
    const site = join(dir, 'site');
    const state = join(dir, 'state');
    mkdirSync(site);
    mkdirSync(state);
    // The installed site configuration (its plugin loads, the .pre files) with Bayes pointed at our database.
    for (const f of readdirSync('/etc/spamassassin')) if (f.endsWith('.pre') || f.endsWith('.cf')) copyFileSync(join('/etc/spamassassin', f), join(site, f));
    writeFileSync(join(site, 'zz_bench.cf'), `use_bayes 1\nbayes_auto_learn 0\nbayes_auto_expire 0\nbayes_path ${join(state, 'bayes')}\nbayes_store_module Mail::SpamAssassin::BayesStore::DBM\n`);
    writeFileSync(join(state, 'user_prefs'), '');
    for (const [cls, spam] of [['spam', true], ['ham', false]] as const) {
      const folder = join(dir, `train-${cls}`);
      mkdirSync(folder);
      train.filter((m) => m.spam === spam).forEach((m, i) => writeFileSync(join(folder, `${i}.eml`), m.raw));
      const learned = spawnSync('sa-learn', [`--siteconfigpath=${site}`, `--dbpath=${join(state, 'bayes')}`, `--${cls}`, folder], { encoding: 'utf8' });
      if (learned.status !== 0) throw new Error(`sa-learn --${cls} failed: ${learned.stderr}`);
    }
    const chosen = sample > 0 ? [...test.filter((m) => m.spam).slice(0, sample), ...test.filter((m) => !m.spam).slice(0, sample)] : [...test];
    const folder = join(dir, 'test');
    mkdirSync(folder);
    const byFile = new Map<string, CorpusMessage>();
    chosen.forEach((m, i) => {
      const file = join(folder, `${i}.eml`);
      writeFileSync(file, m.raw);
      byFile.set(file, m);
    });
    writeFileSync(join(dir, 'list'), [...byFile.keys()].join('\n') + '\n');
    writeFileSync(join(dir, 'check.pl'), CHECK);
    const run = spawnSync('perl', [join(dir, 'check.pl'), site, state, join(dir, 'list')], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
    if (run.status !== 0) throw new Error(`spamassassin check failed: ${run.stderr.slice(-2000)}`);
    return run.stdout.trim().split('\n').map((line) => {
      const [file, score, isSpam, ms, version] = line.split('\t');
      const m = byFile.get(file!)!;
      return { name: m.name, spam: m.spam, score: Number(score), isSpam: isSpam === '1', ms: Number(ms), version: version ?? '' };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
