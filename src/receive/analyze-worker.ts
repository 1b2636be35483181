// Runs inside an analyze worker thread (analyzer.ts): authenticates and parses the messages the MX listener
// posts, and parses those SMTP submission posts. Its DNS lookups go to the configured resolvers through a
// short answer cache of its own. A received message is packed for storage here too (mail/packing.ts), off the
// event loop and the writer thread.
import { workerData } from 'node:worker_threads';
import { cachingLookup } from '../dns/cache.ts';
import { createResolver } from '../dns/resolver.ts';
import { asBuffer, movingContents, serveJobs, transferable } from '../threads/worker-pool.ts';
import { analyze, type Analysis } from './analyze.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';
import { packMail, type PackedMail } from '../mail/packing.ts';
import { withoutAuthResultsOf } from '../mail/trace.ts';

export interface AnalyzeJob {
  kind: 'analyze';
  raw: Uint8Array;
  ip: string;
  helo: string;
  mailFrom: string;
  hostname: string;
  /** Our Received field (CRLF-terminated), first in the stored message. */
  trace: string;
  /** Pack the message alone too: a recipient is a VERP address, whose report is kept without bodies. */
  alone: boolean;
}

/** An analysis with the message as it is to be stored. */
export interface StoredAnalysis extends Analysis {
  stored: PackedMail;
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
  const result: StoredAnalysis | ParsedMessage =
    job.kind === 'parse' ? await parseMessage(raw) : storing(await analyze(raw, { ip: job.ip, helo: job.helo, mailFrom: job.mailFrom, hostname: job.hostname, dns }), raw, job);
  // Attachments and packed bytes move to the main thread instead of being copied.
  const transfer: ArrayBuffer[] = [];
  const parsed = 'parsed' in result ? result.parsed : result;
  parsed.attachments = movingContents(parsed.attachments, transfer);
  if ('stored' in result) result.stored = moving(result.stored, transfer);
  return { result, transfer };
});

/**
 * The message as stored, packed: our trace and Authentication-Results fields, then the bytes as received less
 * any Authentication-Results that claims to be ours (RFC 8601 5).
 */
function storing(analysis: Analysis, raw: Buffer, job: AnalyzeJob): StoredAnalysis {
  const message = Buffer.concat([Buffer.from(job.trace + analysis.authHeaders, 'latin1'), withoutAuthResultsOf(raw, job.hostname)]);
  return { ...analysis, stored: packMail(message, analysis.parsed.text, analysis.parsed.html, { alone: job.alone }) };
}

function moving(p: PackedMail, transfer: ArrayBuffer[]): PackedMail {
  const move = <T>(b: T): T => {
    if (!Buffer.isBuffer(b)) return b;
    const own = transferable(b);
    transfer.push(own.buffer);
    return own as T;
  };
  return { raw: move(p.raw), size: p.size, text: move(p.text), html: move(p.html), alone: move(p.alone) };
}
