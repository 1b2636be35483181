// A received message's analysis as it travels from the analyze worker that made it to the writer thread that
// files it (file.ts): one serialized value whose bytes are moved, never copied, past the event loop. The event
// loop answers SMTP for every session: it reads only what it logs, so the message's text, HTML, headers and
// packed bytes never become garbage in its heap. Pure; no SQL, no threads.
import { deserialize, serialize } from 'node:v8';
import type { ParsedMessage } from '../mail/parse.ts';
import type { PackedMail } from '../mail/packing.ts';
import type { AuthVerdicts } from './authenticate.ts';
import type { PackedTokens } from '../filter/tokens.ts';
import type { Signal } from '../filter/signals.ts';
import type { ReportReading } from '../mail/received-report.ts';

/** What filing needs of the analysis: the parsed fields, the verdicts and the message packed for storage. */
export interface AnalysisParts {
  parsed: ParsedMessage;
  verdicts: AuthVerdicts;
  stored: PackedMail;
  /** The content filter's tokens (filter/tokens.ts), made on the analyze thread; absent when spam_filter is off. */
  tokens?: PackedTokens;
  /** Why the tokens could not be made: the message is filed without a content verdict. */
  tokenProblem?: string;
  /**
   * Spam evidence: the SMTP session's (score-mode DNS blocklists, reverse DNS, HELO: smtp/door.ts), URI blocklist
   * listings of the message's links, rspamd's verdict when spam_filter is rspamd; absent counts as none.
   */
  evidence?: Signal[];
  /** The new text without quoted history and signature (mail/reply.ts extractReply), made on the analyze thread. */
  extractedText?: string | null;
  /** The reports read from a message to a report address (AnalyzeJob.reports), one per format asked for. */
  readings?: ReportReading[];
}

/**
 * node:v8's serializer writes Buffers as Buffers (structured clone would give back plain Uint8Arrays), and the
 * result owns its memory, so it can be transferred.
 */
export const serializeAnalysis = (parts: AnalysisParts): Buffer => serialize(parts);

export const deserializeAnalysis = (bytes: Uint8Array): AnalysisParts => deserialize(bytes) as AnalysisParts;
