// Runs inside an analyze worker thread (analyzer.ts): authenticates and parses the messages the MX listener
// posts, and parses those SMTP submission posts. Its DNS lookups go to the configured resolvers by way of the
// thread that started it (dns/remote.ts), through a short answer cache of its own. A received message is
// packed for storage here too (mail/packing.ts), off the event loop and the writer thread, and its analysis
// goes back serialized for the writer (analysed.ts).
import { workerData } from 'node:worker_threads';
import { cachingLookup } from '../dns/cache.ts';
import { remoteLookup } from '../dns/remote.ts';
import { asBuffer, movingContents, serveJobs, transferable } from '../threads/worker-pool.ts';
import { analyze, type Analysis } from './analyze.ts';
import { serializeAnalysis } from './analysed.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';
import { packMail, type PackedMail } from '../mail/packing.ts';
import { withoutAuthResultsOf } from '../mail/trace.ts';
import { messageTokens, packTokens, type PackedTokens } from '../filter/tokens.ts';

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
  /** Make the content filter's tokens too (spam_filter = "builtin"). */
  tokens?: boolean;
}

/**
 * What the event loop gets for a received message: the two fields it logs, and the rest (parsed fields,
 * verdicts, the message packed for storage) serialized for the writer thread, moved, never read on the way.
 */
export interface StoredAnalysis {
  messageId: string | null;
  problem: string | null;
  /** Set when DKIM signatures (or the ARC sets) were left unchecked: how many were checked of how many. */
  unchecked?: { checked: number; of: number; arc: boolean };
  /** serializeAnalysis() of the analysis (analysed.ts). */
  analysis: Uint8Array;
  /** Why the content filter's tokens could not be made (the message is filed without a content verdict). */
  tokenProblem?: string;
}

/** A submitted message, which needs no authentication: only mailparser's reading. */
export interface ParseJob {
  kind: 'parse';
  raw: Uint8Array;
}

/** A stored message to teach the content filter (receive/trainer.ts): mailparser's reading, then its tokens. */
export interface TokensJob {
  kind: 'tokens';
  raw: Uint8Array;
}

// Asked of the thread that started this one (dns/remote.ts): a worker stopped for its budget must not be
// parsing a DNS answer of its own. Answers are kept here for a while, so only a miss crosses threads.
const dns = cachingLookup(remoteLookup(workerData.dnsChannel as string));
const maxSignatures = workerData.dkimMaxSignatures as number | undefined;

// mailauth 4.13.3 prints a stray debugging line (dkim-verifier.js: 'TOTAL ... EXPECTING ...') for every
// signature whose l= does not match the body: plain text in the middle of the box's JSON log lines on stdout.
// Nothing this thread runs logs through console.log on purpose.
console.log = () => {};

serveJobs<AnalyzeJob | ParseJob | TokensJob, StoredAnalysis | ParsedMessage | PackedTokens>(async (job) => {
  const raw = asBuffer(job.raw);
  const transfer: ArrayBuffer[] = [];
  if (job.kind === 'tokens') return { result: packTokens(messageTokens(await parseMessage(raw))), transfer };
  if (job.kind === 'parse') {
    const parsed = await parseMessage(raw);
    // Attachments move to the main thread instead of being copied.
    parsed.attachments = movingContents(parsed.attachments, transfer);
    return { result: parsed, transfer };
  }
  const analysis = await analyze(raw, { ip: job.ip, helo: job.helo, mailFrom: job.mailFrom, hostname: job.hostname, dns, maxSignatures });
  const { parsed, verdicts, unchecked } = analysis;
  const filter = job.tokens ? tokensOf(parsed) : {};
  const bytes = transferable(serializeAnalysis({ parsed, verdicts, stored: storing(analysis, raw, job), ...filter }));
  transfer.push(bytes.buffer);
  return { result: { messageId: parsed.messageId, problem: parsed.problem, unchecked, analysis: bytes, tokenProblem: filter.tokenProblem } satisfies StoredAnalysis, transfer };
});

/** The content filter's tokens; a failure is reported, never fatal: the message is filed without a content verdict. */
function tokensOf(parsed: ParsedMessage): { tokens?: PackedTokens; tokenProblem?: string } {
  try {
    return { tokens: packTokens(messageTokens(parsed)) };
  } catch (err) {
    return { tokenProblem: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The message as stored, packed: our trace and Authentication-Results fields, then the bytes as received less
 * any Authentication-Results that claims to be ours (RFC 8601 5).
 */
function storing(analysis: Analysis, raw: Buffer, job: AnalyzeJob): PackedMail {
  const message = Buffer.concat([Buffer.from(job.trace + analysis.authHeaders, 'latin1'), withoutAuthResultsOf(raw, job.hostname)]);
  return packMail(message, analysis.parsed.text, analysis.parsed.html, { alone: job.alone });
}
