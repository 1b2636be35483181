// Runs inside an analyze worker thread (analyzer.ts): authenticates and parses the messages the MX listener
// posts, and parses those SMTP submission posts. Its DNS lookups go to the configured resolvers by way of the
// thread that started it (dns/remote.ts), through a short answer cache of its own. A received message is
// packed for storage here too (mail/packing.ts), off the event loop and the writer thread, and its analysis
// goes back serialized for the writer (analysed.ts), with the spam evidence: the session's, the URI
// blocklist listings of its links (links.ts) and rspamd's verdict (filter/rspamd.ts), asked beside the rest.
import { workerData } from 'node:worker_threads';
import { cachingLookup } from '../dns/cache.ts';
import { remoteLookup } from '../dns/remote.ts';
import { asBuffer, movingContents, serveJobs, transferable } from '../threads/worker-pool.ts';
import { analyze, type Analysis } from './analyze.ts';
import { serializeAnalysis } from './analysed.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';
import { packMail, type PackedMail } from '../mail/packing.ts';
import { withoutAuthResultsOf } from '../mail/trace.ts';
import { checkWithRspamd, rspamdSignal } from '../filter/rspamd.ts';
import type { Signal } from '../filter/signals.ts';
import { askLinks, MAX_LINK_DOMAINS } from './links.ts';
import { messageTokens, packTokens, type PackedTokens } from '../filter/tokens.ts';
import { readReceivedReport, type ReportFormat } from '../mail/received-report.ts';
import { extractedTextOf as extractText } from '../mail/reply.ts';

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
  /** The envelope's recipients (rspamd's Rcpt). */
  rcpt: string[];
  /** The client's reverse DNS name, when it has one (rspamd's Hostname). */
  ptr: string | null;
  /** What the SMTP session found for the spam filter (smtp/door.ts), carried into the analysis. */
  evidence: Signal[];
  /** Look the domains of the message's links up in the URI blocklists (links.ts). */
  links: boolean;
  /** Ask rspamd for its verdict (spam_filter = rspamd). */
  rspamd: { url: string; timeoutMs: number } | null;
  /** Make the content filter's tokens too (spam_filter = "builtin"). */
  tokens?: boolean;
  /** The reports to read from the message: it was sent to the domain's DMARC or TLS report address. */
  reports?: ReportFormat[];
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
  /** rspamd was asked and gave no verdict: why (the message goes on without one). */
  rspamdProblem?: string;
  /** Why the content filter's tokens could not be made (the message is filed without a content verdict). */
  tokenProblem?: string;
  /** How many of the reports asked for (AnalyzeJob.reports) the message had no report for at all. */
  reportsMissing?: number;
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
// URI blocklist questions go to the thread that started this one too, uncached here: its cache keeps each
// answer for the zone's TTL, for every thread (links.ts).
const links = remoteLookup(workerData.linkChannel as string);
// Loaded at the first message with links to look up: tldts's suffix list costs a thread's start-up most of a
// second on a busy box, for nothing where uribl is empty.
let tokens: Promise<typeof import('../filter/tokens.ts')> | undefined;
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
  const linkEvidence = job.links ? async (parsed: ParsedMessage) => askLinks(links, (await (tokens ??= import('../filter/tokens.ts'))).linkDomains(parsed, MAX_LINK_DOMAINS)) : undefined;
  // rspamd reads the message as received, beside our own analysis.
  const [analysis, rspamd] = await Promise.all([
    analyze(raw, { ip: job.ip, helo: job.helo, mailFrom: job.mailFrom, hostname: job.hostname, dns, maxSignatures }, linkEvidence),
    job.rspamd ? checkWithRspamd(job.rspamd, raw, { ip: job.ip, helo: job.helo, ptr: job.ptr, mailFrom: job.mailFrom, rcpt: job.rcpt, hostname: job.hostname }) : null,
  ]);
  const { parsed, verdicts, unchecked } = analysis;
  const evidence = [...job.evidence, ...analysis.links, ...(rspamd?.ok ? [rspamdSignal(rspamd.value)] : [])];
  const filter = job.tokens ? tokensOf(parsed) : {};
  // Read here, off the event loop and the writer: decompressing and parsing are the costly part of a report.
  const readings = job.reports?.length ? await Promise.all(job.reports.map((f) => readReceivedReport(f, parsed, dns))) : undefined;
  const reportsMissing = readings?.filter((r) => 'rejected' in r && r.notAReport).length;
  // Within the analysis's wall-clock budget, like the rest: the parser's regexes read text a stranger wrote.
  const extractedText = extractedTextOf(parsed);
  const bytes = transferable(serializeAnalysis({ parsed, verdicts, stored: storing(analysis, raw, job), evidence, extractedText, ...filter, ...(readings && { readings }) }));
  transfer.push(bytes.buffer);
  const rspamdProblem = rspamd && !rspamd.ok ? { rspamdProblem: rspamd.problem } : {};
  return { result: { messageId: parsed.messageId, problem: parsed.problem, unchecked, analysis: bytes, tokenProblem: filter.tokenProblem, reportsMissing, ...rspamdProblem } satisfies StoredAnalysis, transfer };
});

/** extractedText, or null when the reply parser fails on the text: the message is stored whole either way. */
function extractedTextOf(parsed: ParsedMessage): string | null {
  try {
    return extractText(parsed);
  } catch {
    return null;
  }
}

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
