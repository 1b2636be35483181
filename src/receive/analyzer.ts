// The worker threads that authenticate and parse received mail (analyze.ts) and parse submitted mail, so the
// event loop that answers every SMTP session spends its time on the protocol and the store. Each worker has a heap limit: a message
// built to blow up when decoded (catalogue RES-08) ends that worker and fails its message with a 451,
// never the process.
import type { Config } from '../config.ts';
import { asBuffer, WorkerPool } from '../worker-pool.ts';
import type { Analysis } from './analyze.ts';
import type { AnalyzeJob, ParseJob } from './analyze-worker.ts';
import type { ParsedMessage } from './parse.ts';

export class Analyzer extends WorkerPool<AnalyzeJob | ParseJob, Analysis | ParsedMessage> {
  constructor(config: Pick<Config, 'dnsServers'>, opts: { size?: number } = {}) {
    super({
      name: 'analyze',
      module: new URL('./analyze-worker.ts', import.meta.url),
      size: opts.size,
      workerData: { dnsServers: config.dnsServers },
      resourceLimits: { maxOldGenerationSizeMb: 512 },
      // Authentication waits on DNS: a few more messages per worker keep it busy while one waits.
      jobsPerWorker: 8,
    });
  }

  async analyze(raw: Buffer, ctx: Omit<AnalyzeJob, 'raw' | 'kind'>): Promise<Analysis> {
    const analysis = (await this.run({ kind: 'analyze', ...ctx, raw: new Uint8Array(raw) })) as Analysis;
    withBuffers(analysis.parsed);
    return analysis;
  }

  /** mailparser's reading of a message, without authentication (SMTP submission). */
  async parse(raw: Buffer): Promise<ParsedMessage> {
    return withBuffers((await this.run({ kind: 'parse', raw: new Uint8Array(raw) })) as ParsedMessage);
  }
}

function withBuffers(parsed: ParsedMessage): ParsedMessage {
  for (const a of parsed.attachments) a.content = asBuffer(a.content);
  return parsed;
}
