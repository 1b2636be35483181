// Runs inside an analyze worker thread (analyzer.ts): authenticates and parses the messages the MX listener
// posts. Its DNS lookups go to the configured resolvers through a short answer cache of its own.
import { workerData } from 'node:worker_threads';
import { cachingLookup } from '../dns/cache.ts';
import { createResolver } from '../dns/resolver.ts';
import { serveJobs, transferable } from '../worker-pool.ts';
import { analyze, type Analysis } from './analyze.ts';

export interface AnalyzeJob {
  raw: Uint8Array;
  ip: string;
  helo: string;
  mailFrom: string;
  hostname: string;
}

const dns = cachingLookup(createResolver(workerData.dnsServers as string[]));

serveJobs(async (job: AnalyzeJob) => {
  const raw = Buffer.from(job.raw.buffer, job.raw.byteOffset, job.raw.byteLength);
  const analysis: Analysis = await analyze(raw, { ip: job.ip, helo: job.helo, mailFrom: job.mailFrom, hostname: job.hostname, dns });
  // Attachments move to the main thread instead of being copied.
  const transfer: ArrayBuffer[] = [];
  for (const a of analysis.parsed.attachments) {
    const content = transferable(a.content);
    transfer.push(content.buffer);
    a.content = content as Buffer;
  }
  return { result: analysis, transfer };
});
