// Test-only: bounded waits. A test never waits without a bound, and says what it was waiting for when the
// bound passes; the bound is a failure, never a speed figure.

/** `promise`, or a failure naming `what` after `ms`. */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Resolves once `check` holds, polling every 20 ms, or fails naming `what` after `ms`. */
export async function until(ms: number, what: string, check: () => boolean): Promise<void> {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > end) throw new Error(`${what}: not so after ${ms} ms`);
  }
}
