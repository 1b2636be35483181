// `npm run bench`: every benchmark, one after the other, printing Markdown tables for the README.
// Figures are ratios to a baseline measured in the same run on the same machine, never absolute targets.
import { cpus, totalmem } from 'node:os';
import { benchGroupCommit } from './group-commit.ts';

console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`);
await benchGroupCommit();
