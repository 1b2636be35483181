// What a received message says about itself, worked out once for all its recipients: the authentication
// verdicts (mailauth, through the given DNS lookup) and the parsed fields (mailparser). CPU-heavy and free of
// the database, so the MX listener runs it on worker threads (analyze-worker.ts, analyzer.ts).
import { authenticate, type AuthContext, type Authenticated, type AuthVerdicts } from './authenticate.ts';
import { parseMessage, type ParsedMessage } from '../mail/parse.ts';

export interface Analysis {
  verdicts: AuthVerdicts;
  /** Our Authentication-Results field (CRLF-terminated), to put in front of the stored message. */
  authHeaders: string;
  parsed: ParsedMessage;
  /** Set when signatures were left unchecked (Authenticated.unchecked). */
  unchecked?: Authenticated['unchecked'];
}

export async function analyze(raw: Buffer, ctx: AuthContext): Promise<Analysis> {
  const [auth, parsed] = await Promise.all([authenticate(raw, ctx), parseMessage(raw)]);
  return { verdicts: auth.verdicts, authHeaders: auth.headers, parsed, unchecked: auth.unchecked };
}
