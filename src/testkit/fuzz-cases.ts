// Test-only: fast-check's interruptAfterTimeLimit bounds a property's time by abandoning the case running at the
// limit, unawaited. A case that talks to the app goes on, and its writes land in whatever the test checks next
// (a snapshot, the next test's digest). Tracked cases can be waited for once fc.assert returns.

/**
 * `track` wraps a property's predicate; `settled` resolves once the last case started has ended. A case may call
 * `settled` before its first await, to wait for the case before it: `last` becomes the new case only after that.
 */
export function trackedCases(): { track: <A extends unknown[]>(run: (...args: A) => Promise<void>) => (...args: A) => Promise<void>; settled: () => Promise<unknown> } {
  let last: Promise<unknown> = Promise.resolve();
  return {
    track:
      (run) =>
      (...args) => {
        const running = run(...args);
        last = running.catch(() => undefined);
        return running;
      },
    settled: () => last,
  };
}
