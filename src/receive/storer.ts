// The receive pipeline's writer: one thread with its own SQLite connection that files analysed messages
// (store-worker.ts) in group commits. One thread, because SQLite has one writer at a time: a second would
// only wait on the lock. It takes many jobs at once so that they share a commit.
import type { Config } from '../config.ts';
import type { Log } from '../log.ts';
import { transferable, WorkerPool } from '../worker-pool.ts';
import type { Analysed, Filed } from './file.ts';
import type { FileJob, FileResult } from './store-worker.ts';

export class Storer extends WorkerPool<FileJob, FileResult> {
  constructor(config: Pick<Config, 'dataDir'>) {
    super({ name: 'store', module: new URL('./store-worker.ts', import.meta.url), size: 1, jobsPerWorker: 1024, workerData: { dataDir: config.dataDir } });
  }

  /** Resolves after the message is committed and fsynced; the caller's buffers move to the writer. */
  async file(m: Analysed, now: number, log: Log): Promise<Filed> {
    const raw = transferable(m.raw);
    const transfer: ArrayBuffer[] = [raw.buffer];
    const attachments = m.parsed.attachments.map((a) => {
      const content = transferable(a.content);
      transfer.push(content.buffer);
      return { ...a, content: content as Buffer };
    });
    const { logs, ...filed } = await this.run({ ...m, raw, parsed: { ...m.parsed, attachments }, now }, [...new Set(transfer)]);
    for (const entry of logs) log[entry.level](entry.msg, entry.fields);
    return filed;
  }
}
