// Teaches the workspaces' content filters what their owners said (filter/learning.ts queues it: a move to or
// from Spam, a reply): reads each stored message as received, has an analyze thread parse and tokenize it the
// way the MX listener's analysis did (so it is learned with the tokens it was scored with), and hands the
// tokens to the writer job `spam.train`. A model over its bound is pruned by a job of its own. Runs beside the
// mail, a few messages at a time; nothing here can fail a request or a delivery.
import { BackgroundLoop } from '../threads/background-loop.ts';
import type { App } from '../context.ts';
import { FullDiskNotice } from '../db/full-disk.ts';
import { emailRaw } from '../emails/mailbox.ts';
import { dueTraining, type PendingTraining } from '../filter/learning.ts';
import { unpackTokens } from '../filter/tokens.ts';
import type { Analyzer } from './analyzer.ts';

const BATCH = 20;
const IDLE_POLL_MS = 1000;

export class Trainer extends BackgroundLoop {
  private readonly fullDisk: FullDiskNotice;

  constructor(
    private readonly app: Pick<App, 'db' | 'store' | 'writer' | 'clock' | 'log'>,
    private readonly analyzer: Pick<Analyzer, 'tokens'>,
  ) {
    super();
    this.fullDisk = new FullDiskNotice(app.log, 'teaching the spam filter');
  }

  protected async run(): Promise<void> {
    try {
      for (;;) {
        if (this.stopped) break;
        const due = await this.app.store.read(dueTraining(this.app.clock.now(), BATCH));
        for (const wish of due) {
          if (this.stopped) break;
          await this.learn(wish);
        }
        if (due.length < BATCH) break;
      }
      this.fullDisk.succeeded();
    } catch (err) {
      if (!this.fullDisk.failed(err)) this.app.log.error('teaching the spam filter failed; trying again shortly', { err });
    }
    if (!this.stopped) this.schedule(IDLE_POLL_MS);
  }

  private async learn(wish: PendingTraining): Promise<void> {
    const { store, writer, clock, log } = this.app;
    const found = await emailRaw(store, wish.workspaceId, wish.emailId);
    const retry = async (giveUp: boolean) => {
      const [dropped] = await writer.commit([{ kind: 'spam.retry', payload: { emailId: wish.emailId, queuedAt: wish.queuedAt, giveUp } }], { now: clock.now(), log });
      return dropped;
    };
    if (!found?.raw) {
      // Deleted meanwhile (its wish went with it), or its bytes removed by retention_raw_days: nothing to learn from.
      if (found) log.info('spam filter cannot learn a message whose raw bytes were removed', { emailId: wish.emailId, workspaceId: wish.workspaceId });
      await retry(true);
      return;
    }
    let tokens: string[];
    try {
      tokens = unpackTokens(await this.analyzer.tokens(found.raw)).tokens;
    } catch (err) {
      const dropped = await retry(false);
      log.warn(dropped ? 'spam filter gave up learning a message it could not tokenize' : 'spam filter could not tokenize a message to learn; trying again later', { emailId: wish.emailId, err });
      return;
    }
    const [learned] = await writer.commit([{ kind: 'spam.train', payload: { emailId: wish.emailId, workspaceId: wish.workspaceId, queuedAt: wish.queuedAt, tokens } }], { now: clock.now(), log });
    if (!learned) return;
    log.info('spam filter learned', { emailId: wish.emailId, workspaceId: wish.workspaceId, class: wish.class, source: wish.source, outcome: learned.outcome });
    if (learned.pruneDue) {
      const [pruned] = await writer.commit([{ kind: 'spam.prune', payload: { workspaceId: wish.workspaceId } }], { now: clock.now(), log });
      log.info('spam filter model pruned', { workspaceId: wish.workspaceId, ...pruned });
    }
  }
}
