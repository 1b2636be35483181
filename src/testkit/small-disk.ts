// A data directory on a small tmpfs that a test fills to the last byte and frees again, the way a disk fills
// up under a running box (as db/disk-full.test.ts does). Needs mount(8), so root: `small()` answers null
// with the reason where that is not allowed, and the test skips.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './app.ts';

export interface SmallDisk {
  dir: string;
  /** Writes a filler until not one block is left; the bytes written. */
  fill(): number;
  /** Removes the filler. */
  free(): void;
  unmount(): void;
}

export function smallDisk(sizeMb = 12): SmallDisk | string {
  const dir = tempDir('mailwright-small-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe', timeout: 10_000 });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${String((err as Error).message).split('\n')[0]})`;
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
