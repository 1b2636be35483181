// Test-only: a real full filesystem. A small tmpfs mounted on a temporary folder (mount(8) needs root, which CI
// has; elsewhere the caller skips with the reason), filled to its last page by one file and emptied by deleting it.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './app.ts';

export interface SmallDisk {
  /** The mount point: a filesystem of its own, mode 0700. */
  dir: string;
  /** Writes to a filler file until not one page is left; returns the bytes written. */
  fill(): number;
  /** Deletes the filler: the space is back. */
  free(): void;
  unmount(): void;
}

/** A tmpfs of `sizeMb`, or the reason there cannot be one here. */
export function mountSmallDisk(sizeMb: number, label = 'mailwright-full-'): SmallDisk | { skipped: string } {
  const dir = tempDir(label);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe', timeout: 10_000 });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return { skipped: `cannot mount a tmpfs here (${String((err as Error).message).split('\n')[0]})` };
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 1);
      let written = 0;
      try {
        for (let size = chunk.length; size >= 512; ) {
          try {
            written += writeSync(fd, chunk, 0, size);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
            size /= 2;
          }
        }
      } finally {
        closeSync(fd);
      }
      return written;
    },
    free: () => rmSync(filler, { force: true }),
    unmount() {
      try {
        execFileSync('umount', [dir], { stdio: 'pipe', timeout: 10_000 });
      } catch {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe', timeout: 10_000 }); // still busy: detach it
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
