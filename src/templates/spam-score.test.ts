// Each starter template, sent as a test send with its sample data through the real box (rendered, composed and
// DKIM-signed as any send), scores at most 0 with SpamAssassin in local mode (`spamassassin -L -t`: no network
// tests), as a receiver running it would see it. Skipped, saying so, where SpamAssassin is not installed
// (.ci/run installs Debian's package).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../testkit/app.ts';
import { eventually, startOutboundScene, type OutboundScene } from '../testkit/outbound.ts';
import { STARTER_NAMES } from './content.ts';

const installed = spawnSync('spamassassin', ['--version'], { encoding: 'utf8' }).status === 0;

/** SpamAssassin's verdict on `raw`: its score and the rules that hit, from the X-Spam-Status field it adds. */
function score(raw: Buffer, home: string): Promise<{ score: number; tests: string[]; report: string }> {
  return new Promise((resolve, reject) => {
    // Its own HOME: SpamAssassin writes user preferences and Bayes auto-learning there.
    const sa = spawn('spamassassin', ['-L', '-t'], { env: { ...process.env, HOME: home }, stdio: ['pipe', 'pipe', 'ignore'] });
    const out: Buffer[] = [];
    sa.stdout.on('data', (c: Buffer) => out.push(c));
    sa.on('error', reject);
    sa.on('close', () => {
      const text = Buffer.concat(out).toString('latin1');
      const status = /^X-Spam-Status: (?:Yes|No), score=(-?\d+(?:\.\d+)?)[^\r\n]*(?:\r?\n[ \t][^\r\n]*)*/m.exec(text);
      if (!status) return reject(new Error(`no X-Spam-Status in SpamAssassin's output:\n${text.slice(0, 2000)}`));
      const tests = /tests=([^ ]*(?:\s+[A-Z0-9_,]+)*)/.exec(status[0].replace(/\r?\n[ \t]+/g, ' '))?.[1] ?? '';
      const report = text.slice(text.indexOf('Content analysis details'));
      resolve({ score: Number(status[1]), tests: tests.split(',').map((t) => t.trim()).filter(Boolean), report });
    });
    sa.stdin.end(raw);
  });
}

if (!installed) {
  console.log('spam-score.test.ts: SpamAssassin is not installed (apt-get install spamassassin; .ci/run does): the starters are not scored here');
  test.skip('each starter scores at most 0 with SpamAssassin in local mode', () => {});
} else {
  let s: OutboundScene;
  let home: string;
  test.before(async () => {
    home = mkdtempSync(join(tmpdir(), 'mw-spamassassin-'));
    s = await startOutboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
    await s.verifiedDomain('acme.test');
    s.routeTo('dest.test');
  });
  test.after(async () => {
    await s.stop();
    rmSync(home, { recursive: true, force: true });
  });

  for (const starter of STARTER_NAMES.filter((n) => n !== 'blank')) {
    test(`${starter}: its test send with the sample data scores at most 0 with SpamAssassin in local mode`, async () => {
      const api = (path: string, body: unknown) => request(`${s.t.api}${path}`, { key: s.key, body });
      const created = await api('/templates', { name: `Starter ${starter}`, key: `spam-${starter}`, starter });
      assert.is(created.status, 201, JSON.stringify(created.body));
      const to = `${starter}@dest.test`;
      const sent = await api(`/templates/${created.body.template.id}/test`, { to: [to], from: 'Acme Cloud <hello@acme.test>' });
      assert.is(sent.status, 201, JSON.stringify(sent.body));
      const m = await eventually(() => s.sink.messages.find((x) => x.rcptTo.includes(to)), 10_000, `the ${starter} test send`);
      assert.match(m.raw.toString('latin1'), /^DKIM-Signature: /m, 'scored as it goes out: signed');
      const verdict = await score(m.raw, home);
      assert.ok(verdict.score <= 0, `${starter} scored ${verdict.score} (${verdict.tests.join(', ')}):\n${verdict.report}`);
      for (const rule of ['HTML_FONT_LOW_CONTRAST', 'FONT_INVIS_MSGID']) assert.not.ok(verdict.tests.includes(rule), `${starter}: ${rule}`);
    });
  }
}

test.run();
