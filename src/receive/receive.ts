// The receive pipeline (docs/architecture.md): what the MX listener hands over after DATA is refused if it is a
// smuggling attempt or a loop, then authenticated (mailauth), parsed (mailparser) and tokenized for the content
// filter on the analyze workers, which refuse an oversized header section, answer 451 past their time budget
// (analyzer.ts) and gather the spam evidence (the session's, URI blocklists', rspamd's) into the analysis, and
// filed (file.ts: judged for spam, classified, threaded, stored with its index rows, forwarded if asked) by the
// writer thread in one group-committed transaction. It resolves only after that commit, so the 250 is never early.
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import { hasSmugglingLookAlike } from '../mail/smuggling.ts';
import { countReceived } from '../mail/trace.ts';
import { networkOf } from '../dns/ip-ranges.ts';
import { AnalysisTimeout, type Analyzer } from './analyzer.ts';
import type { Target } from './route.ts';
import type { Writer } from '../db/writer.ts';
import { fileInWriter } from './file.ts';
import type { Signal } from '../filter/signals.ts';

/** RFC 5321 6.3 leaves the hop limit to the receiver; Postfix and Stalwart use 50. */
export const MAX_RECEIVED = 50;

export interface Envelope {
  sessionId: string;
  ip: string;
  helo: string;
  /** The client's name from its PTR record (through the configured resolvers), when it has one. */
  ptr: string | null;
  tls: boolean;
  mailFrom: string;
  recipients: Array<{ address: string; target: Target }>;
  /** What the session found about the client for the spam filter (smtp/door.ts), carried into the analysis. */
  evidence: Signal[];
}

/** The worker threads a message passes through. */
export interface ReceiveWorkers {
  analyzer: Analyzer;
  writer: Pick<Writer, 'commit'>;
}

/** Checks, authenticates, parses and stores a message; returns the ids it was stored as. */
export async function receive(app: App, workers: ReceiveWorkers, envelope: Envelope, data: Buffer): Promise<string[]> {
  if (hasSmugglingLookAlike(data)) {
    throw new SmtpError(554, '5.5.2 Message refused: a bare CR or LF around a "." line looks like SMTP smuggling');
  }
  if (countReceived(data) > MAX_RECEIVED) {
    throw new SmtpError(554, `5.4.6 Message refused: more than ${MAX_RECEIVED} Received headers, a mail loop`);
  }

  const { config, log } = app;
  const targets = envelope.recipients.map((r) => r.target);
  // The workers also pack the message as stored: our trace fields, then the bytes as received (less any
  // Authentication-Results claiming to be ours); a report to a VERP address is kept without its bodies.
  // What comes back is serialized for the writer, past this thread: only the fields logged here are read.
  // Keyed by the client's network: waiting messages are taken fairly between clients (analyzer.ts).
  const client = networkOf(envelope.ip);
  const rcpt = envelope.recipients.map((r) => r.address);
  // The content filter's tokens are made there too (spam_filter = "builtin"); the writer scores them.
  const tokens = config.spamFilter === 'builtin';
  // DMARC and TLS reports are read on the workers too (mail/received-report.ts), one reading per format.
  const reports = [...new Set(targets.flatMap((t) => (t.kind === 'aggregate' ? [t.format] : [])))];
  const { messageId, problem, unchecked, analysis, rspamdProblem, tokenProblem, reportsMissing } = await workers.analyzer
    .analyze(data, { ip: envelope.ip, helo: envelope.helo, ptr: envelope.ptr, mailFrom: envelope.mailFrom, rcpt, hostname: config.hostname, trace: traceFields(app, envelope), alone: targets.some((t) => t.kind === 'report'), evidence: envelope.evidence, tokens, reports }, { client })
    .catch((err: unknown) => {
      // The sender gets 451 4.3.0 and tries again later; a warning, not an error of ours.
      if (err instanceof AnalysisTimeout) log.warn('message analysis ran past its budget: worker replaced, answered 451', { session: envelope.sessionId, ip: envelope.ip, client, bytes: data.length, budgetMs: config.analyzeTimeout });
      throw err;
    });
  // Mail only to report addresses with nothing like a report in it is not a report: refused, nothing kept. A
  // report that is there but unreadable is acknowledged and kept aside with its reason (file.ts).
  if (reports.length && targets.every((t) => t.kind === 'aggregate') && reportsMissing === reports.length) {
    throw new SmtpError(550, '5.6.0 Message refused: this address takes only DMARC aggregate reports and TLS reports, and none was found');
  }
  if (problem) log.warn('received message stored unparsed in part', { session: envelope.sessionId, problem });
  // rspamd down never refuses or loses mail: the message is filed without its verdict.
  if (rspamdProblem) log.warn('rspamd gave no verdict; the message is filed without it', { session: envelope.sessionId, problem: rspamdProblem });
  if (config.spamFilter === 'rspamd') app.metrics?.rspamdCheck(rspamdProblem ? 'unavailable' : 'answered');
  if (tokenProblem) log.warn('content filter could not tokenize a received message: filed without a content verdict', { session: envelope.sessionId, problem: tokenProblem });
  const filed = await fileInWriter(workers.writer, { mailFrom: envelope.mailFrom, targets, analysis }, app.clock.now(), log);
  if (filed.forwarded) app.queue.wake();
  // One line per accepted message, after the commit and just before the 250: the sysadmin's "did it arrive?".
  // dkimChecked: "10/500" when signatures past dkim_max_signatures or the other bounds were left unchecked.
  const bounded = unchecked && { dkimChecked: `${unchecked.checked}/${unchecked.of}`, ...(unchecked.arc && { arcChecked: false }) };
  log.info('received', { session: envelope.sessionId, ip: envelope.ip, mailFrom: envelope.mailFrom, recipients: envelope.recipients.length, bytes: data.length, messageId, ids: filed.ids, ...bounded });
  return filed.ids;
}

/** Our Received field (RFC 5321 4.4), first in the stored message. */
function traceFields(app: App, e: Envelope): string {
  const from = `${e.helo || 'unknown'} (${e.ptr ?? 'unknown'} [${e.ip}])`;
  const only = e.recipients.length === 1 ? `\r\n\tfor <${e.recipients[0].address}>` : '';
  const date = new Date(app.clock.now()).toUTCString().replace('GMT', '+0000');
  return `Received: from ${from}\r\n\tby ${app.config.hostname} (Mailwright) with ${e.tls ? 'ESMTPS' : 'ESMTP'} id ${e.sessionId}${only};\r\n\t${date}\r\n`;
}
