// Test-only: the spam evidence of every received message (receive/analysed.ts `evidence`: the door's, the URI
// blocklists', rspamd's) read as the writer thread is handed it, before its bytes move there: what filing and
// the spam filter get, whatever they make of it.
import type { TestApp } from './app.ts';
import { deserializeAnalysis } from '../receive/analysed.ts';
import type { ToFile } from '../receive/file.ts';
import type { Signal } from '../filter/signals.ts';

/** A list that grows by one entry (that message's evidence) for each message the app files from now on. */
export function watchEvidence(t: TestApp): Signal[][] {
  const filed: Signal[][] = [];
  const writer = t.app.writer;
  const commit = writer.commit.bind(writer);
  writer.commit = ((steps, opts) => {
    for (const step of steps) if (step.kind === 'file') filed.push(deserializeAnalysis((step.payload as ToFile).analysis).evidence ?? []);
    return commit(steps, opts);
  }) as typeof writer.commit;
  return filed;
}
