// The worker threads that authenticate, parse and pack for storage received mail (analyze.ts, mail/packing.ts)
// and parse submitted mail, so the event loop that answers every SMTP session spends its time on the protocol
// and the store. No message can hold a worker: its header section is bounded before it is posted
// (mail/header-limits.ts: 552 5.3.4 or 554 5.6.0), the signatures checked are bounded (signature-cap.ts), and
// each analysis has a wall-clock budget (config analyze_timeout) for its own work: a message past it gets
// 451 4.3.0, and the messages that shared its worker run again alone and are answered as usual (catalogue
// RES-06b, RES-06c; threads/worker-pool.ts). Each worker has a heap limit: a message built to blow up when
// decoded (catalogue RES-08) ends that worker and fails that message with a 451, never the process. Jobs carry
// their client's key (its network, or the submitting workspace), so one client cannot hold the workers while
// another's message waits, and a client whose message was refused has its next ones run on a lane of their own.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.ts';
import { answerLookups } from '../dns/remote.ts';
import { createResolver } from '../dns/resolver.ts';
import type { DnsLookup } from '../dns/cache.ts';
import { SmtpError } from '../errors.ts';
import { headerOverLimit } from '../mail/header-limits.ts';
import { asBuffer, JobTimeout, transferable, WorkerPool } from '../threads/worker-pool.ts';
import type { AnalyzeJob, ParseJob, StoredAnalysis, TokensJob } from './analyze-worker.ts';
import type { PackedTokens } from '../filter/tokens.ts';
import type { ParsedMessage } from '../mail/parse.ts';

/** An analysis that ran past its budget: a temporary failure, and no fault of ours worth an error log. */
export class AnalysisTimeout extends SmtpError {
  constructor(budgetMs: number) {
    super(451, `4.3.0 Message analysis ran past its ${budgetMs / 1000} s budget, try again later`);
    this.name = 'AnalysisTimeout';
  }
}

type AnalyzerConfig = Pick<Config, 'dnsServers' | 'analyzeTimeout' | 'dkimMaxSignatures' | 'uribl' | 'spamFilter' | 'rspamdUrl'>;

export class Analyzer extends WorkerPool<AnalyzeJob | ParseJob | TokensJob, StoredAnalysis | ParsedMessage | PackedTokens> {
  private readonly budgetMs: number;
  private readonly stopAnswering: () => void;
  private readonly config: AnalyzerConfig;
  private readonly links: boolean;

  /** `links`: the URI blocklists' answers to the workers' questions (links.ts linkListings); none, none asked. */
  constructor(config: AnalyzerConfig, opts: { size?: number; links?: DnsLookup } = {}) {
    // The workers' DNS queries are asked here, on this thread (dns/remote.ts): a worker stopped for its budget
    // must hold none of its own.
    const dnsChannel = `mailwright-analyze-dns-${randomUUID()}`;
    const linkChannel = `mailwright-analyze-links-${randomUUID()}`;
    super({
      name: 'analyze',
      module: new URL('./analyze-worker.ts', import.meta.url),
      size: opts.size,
      workerData: { dnsChannel, linkChannel, dkimMaxSignatures: config.dkimMaxSignatures },
      resourceLimits: { maxOldGenerationSizeMb: 512 },
      // Authentication waits on DNS: a few more messages per worker keep it busy while one waits.
      jobsPerWorker: 8,
      // Analysis is pure (no store), so the jobs beside one past its budget can run again alone. One solo
      // thread at most (started when needed, ended when idle): memory is what a small box lacks.
      jobTimeoutMs: config.analyzeTimeout,
      soloWorkers: 1,
    });
    this.budgetMs = config.analyzeTimeout;
    this.config = config;
    this.links = opts.links !== undefined;
    const stopDns = answerLookups(dnsChannel, createResolver(config.dnsServers));
    const stopLinks = opts.links ? answerLookups(linkChannel, opts.links) : () => {};
    this.stopAnswering = () => {
      stopDns();
      stopLinks();
    };
  }

  override async close(): Promise<void> {
    this.stopAnswering();
    await super.close();
  }

  /**
   * Authentication and mailparser's reading of a received message (the MX listener), and the message packed
   * for storage: serialized for the writer thread, all but the fields the event loop logs (StoredAnalysis).
   * `raw` is copied to the worker (not moved: a job beside one past its budget can then run again elsewhere),
   * and only copied here first when it is a slice of Node's shared pool, which would be copied whole.
   * `client` is whose message it is (dns/ip-ranges.ts networkOf): waiting messages are taken fairly between clients.
   */
  async analyze(raw: Buffer, ctx: Omit<AnalyzeJob, 'raw' | 'kind' | 'links' | 'rspamd'>, { client = '' }: { client?: string } = {}): Promise<StoredAnalysis> {
    refuseOversizedHeader(raw);
    // Read at every message, so a reload's uribl and rspamd_url apply to the next one.
    const { uribl, spamFilter, rspamdUrl } = this.config;
    const filter = { links: this.links && uribl.length > 0 && spamFilter !== 'off', rspamd: spamFilter === 'rspamd' ? { url: rspamdUrl, timeoutMs: rspamdTimeout(this.budgetMs) } : null };
    return (await this.run({ kind: 'analyze', ...ctx, ...filter, raw: transferable(raw) }, [], { key: client }).catch(this.overBudget)) as StoredAnalysis;
  }

  /** mailparser's reading of a message, without authentication (SMTP submission); `client` as for analyze(). */
  async parse(raw: Buffer, { client = '' }: { client?: string } = {}): Promise<ParsedMessage> {
    refuseOversizedHeader(raw);
    return withBuffers((await this.run({ kind: 'parse', raw: transferable(raw) }, [], { key: client }).catch(this.overBudget)) as ParsedMessage);
  }

  /**
   * The content filter's tokens of a stored message (receive/trainer.ts), made the way the MX listener's
   * analysis makes them, so a message is learned with the tokens it was scored with. Keyed apart from clients.
   */
  async tokens(raw: Buffer): Promise<PackedTokens> {
    return (await this.run({ kind: 'tokens', raw: transferable(raw) }, [], { key: 'trainer' }).catch(this.overBudget)) as PackedTokens;
  }

  private readonly overBudget = (err: unknown): never => {
    throw err instanceof JobTimeout ? new AnalysisTimeout(this.budgetMs) : err;
  };
}

/** rspamd's time for one message: well inside the analysis budget, so a slow rspamd costs its verdict, not a 451. */
const rspamdTimeout = (budgetMs: number) => Math.min(5000, Math.floor(budgetMs / 2));

/** Header sections, fields and folded lines are bounded before any parsing (DESIGN.md section 3). */
function refuseOversizedHeader(raw: Buffer): void {
  const over = headerOverLimit(raw);
  if (!over) return;
  if (over.limit === 'header-bytes' || over.limit === 'header-lines') throw new SmtpError(552, `5.3.4 Message header too big: ${over.text}`);
  throw new SmtpError(554, `5.6.0 Message refused: ${over.text}`);
}

function withBuffers(parsed: ParsedMessage): ParsedMessage {
  for (const a of parsed.attachments) a.content = asBuffer(a.content);
  return parsed;
}
