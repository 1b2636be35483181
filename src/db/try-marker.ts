// The mark of a data directory made by `mailwright try`: a file at its top that says so. try runs only on a
// directory it made (or an empty one), never on a real box's; serve refuses a marked one, so a box never has
// try's behaviour. A backup carries the mark, so a restored copy stays a try box.
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const TRY_MARKER = 'MAILWRIGHT-TRY';

const TEXT = `This directory was made by 'mailwright try': a box for trying Mailwright on this machine, whose mail
for other domains is kept in a local outbox and never sent. 'mailwright serve' refuses it; delete the directory
to start over.
`;

export const isTryDir = (dir: string) => existsSync(join(dir, TRY_MARKER));

/** Whether try may take `dir`: it does not exist yet, is empty, or try made it. */
export function tryMayUse(dir: string): boolean {
  if (!existsSync(dir)) return true;
  if (!statSync(dir).isDirectory()) return false;
  return isTryDir(dir) || readdirSync(dir).length === 0;
}

export function markTryDir(dir: string): void {
  if (!isTryDir(dir)) writeFileSync(join(dir, TRY_MARKER), TEXT, { mode: 0o600 });
}
