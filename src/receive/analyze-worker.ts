// Runs inside an analyze worker thread (analyzer.ts): authenticates and parses the messages the MX listener
// posts, and parses those SMTP submission posts. Its DNS lookups go to the configured resolvers through a
// short answer cache of its own.
import { workerData } from 'node:worker_threads';
import { cachingLookup } from '../dns/cache.ts';
import { createResolver } from '../dns/resolver.ts';
import { asBuffer, movingContents, serveJobs } from '../threads/worker-pool.ts';
import { analyze, type Analysis } from './analyze.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';

export interface AnalyzeJob {
  kind: 'analyze';
  raw: Uint8Array;
  ip: string;
  helo: string;
  mailFrom: string;
  hostname: string;
}

/** A submitted message, which needs no authentication: only mailparser's reading. */
export interface ParseJob {
  kind: 'parse';
  raw: Uint8Array;
}

const dns = cachingLookup(createResolver(workerData.dnsServers as string[]));

// mailauth 4.13.3 prints a stray debugging line (dkim-verifier.js: 'TOTAL ... EXPECTING ...') for every
// signature whose l= does not match the body: plain text in the middle of the box's JSON log lines on stdout.
// Nothing this thread runs logs through console.log on purpose.
console.log = () => {};

serveJobs(async (job: AnalyzeJob | ParseJob) => {
  const raw = asBuffer(job.raw);
  const result: Analysis | ParsedMessage =
    job.kind === 'parse' ? await parseMessage(raw) : await analyze(raw, { ip: job.ip, helo: job.helo, mailFrom: job.mailFrom, hostname: job.hostname, dns });
  // Attachments move to the main thread instead of being copied.
  const transfer: ArrayBuffer[] = [];
  const parsed = 'parsed' in result ? result.parsed : result;
  parsed.attachments = movingContents(parsed.attachments, transfer);
  return { result, transfer };
});
