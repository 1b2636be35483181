// What a received message says about itself, worked out once for all its recipients: the authentication
// verdicts (mailauth, through the given DNS lookup) and the parsed fields (mailparser). CPU-heavy and free of
// the database, so the MX listener runs it on worker threads (analyze-worker.ts, analyzer.ts).
import { authenticate, type AuthContext, type Authenticated, type AuthVerdicts } from './authenticate.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';
import type { Signal } from '../filter/signals.ts';

export interface Analysis {
  verdicts: AuthVerdicts;
  /** Our Authentication-Results field (CRLF-terminated), to put in front of the stored message. */
  authHeaders: string;
  parsed: ParsedMessage;
  /** Set when signatures were left unchecked (Authenticated.unchecked). */
  unchecked?: Authenticated['unchecked'];
  /** What `links` found about the message's links (URI blocklists), while authentication went on. */
  links: Signal[];
}

export async function analyze(raw: Buffer, ctx: AuthContext, links?: (parsed: ParsedMessage) => Promise<Signal[]>): Promise<Analysis> {
  const parsing = parseMessage(raw);
  const [auth, parsed, found] = await Promise.all([authenticate(raw, ctx), parsing, links ? parsing.then(links) : []]);
  return { verdicts: auth.verdicts, authHeaders: auth.headers, parsed, unchecked: auth.unchecked, links: found };
}
