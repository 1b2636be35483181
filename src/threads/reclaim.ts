// Gives the event loop's garbage back to the system after a burst of work: one full collection, which also
// shrinks V8's young generation to its least. A burst of mail grows the event loop's semi-spaces (to 8 MiB with
// scripts/mailwright's V8 flags, 32 without) and its old generation with promoted garbage, and V8 keeps both
// while the process idles (its memory reducer frees some objects but keeps the space): measured 60 s after an
// inbound load, before those flags, 69 MiB committed for 45 MiB "used".
// worker-pool.ts calls it when a pool's last worker has ended for idleness, so it runs at most once per pool
// per quiet spell, never under load.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long after the request the collection runs: pools that go idle together cost one collection. */
const SETTLE_MS = 1000;

let gc: (() => void) | undefined;
let pending: NodeJS.Timeout | undefined;

/** A full collection of this thread's heap soon, once however often it is asked for meanwhile. */
export function reclaimSoon(): void {
  if (pending) return;
  pending = setTimeout(() => {
    pending = undefined;
    collect();
  }, SETTLE_MS);
  // Nothing to reclaim in a process that is ending anyway.
  pending.unref();
}

function collect(): void {
  // node's --expose-gc, set from here rather than the command line (scripts/mailwright, systemd, npm start and
  // the tests all start the process differently); V8 reads it when a context is made, so a new one has gc().
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}
