// Delivery outcomes as data (docs/architecture.md: delivered | deferred | bounced, one per recipient): the outcome
// type, each message's bookkeeping during one attempt, and how replies and failures become verdicts. Pure: it
// must not talk to a server, look anything up, or touch the database.
import type { SMTPError } from 'nodemailer/lib/smtp-connection';

export interface OutboundMessage {
  id: string;
  /** '' for the null sender (MAIL FROM:<>). */
  envelopeFrom: string;
  recipients: string[];
  /** The exact bytes to transmit, CRLF line endings only. */
  raw: Buffer;
}

export interface RecipientOutcome {
  messageId: string;
  recipient: string;
  result: 'delivered' | 'deferred' | 'bounced';
  /** SMTP reply code, null when none (DNS, connection). */
  code: number | null;
  /** Enhanced status code: the reply's (e.g. "5.1.1"), or ours (RFC 3463) when we decided without a reply. */
  enhanced: string | null;
  /** The server's reply as sent (code included), or our reason. */
  response: string;
  /** MX host name (or relay host) that answered, or the last one tried. */
  mx: string | null;
  /** The transaction was encrypted. */
  tls: boolean;
  /** The peer certificate verified against the MX host name (recorded only: delivery never depends on it). */
  tlsVerified: boolean;
  /** Why TLS was not used although offered (STARTTLS failed or was refused), or why the certificate did not verify. */
  tlsError: string | null;
  /** What the delivery's TLS was held to (send/outbound-tls.ts). */
  tlsPolicy: TlsPolicyName;
}

/**
 * `dane` (TLSA records under a validating resolver), `mta-sts` (a policy in enforce), `mta-sts-testing`, `none`
 * (opportunistic STARTTLS, no policy found), `relay` (a relay carried it: neither is checked).
 */
export type TlsPolicyName = 'dane' | 'mta-sts' | 'mta-sts-testing' | 'none' | 'relay';

/** Why a host, a session or a transaction failed, in outcome terms. */
export interface Failure {
  response: string;
  code: number | null;
  enhanced: string | null;
  /** The TLS policy that made a host fail (a deferral for MTA-STS or DANE); 'none' when absent. */
  tlsPolicy?: TlsPolicyName;
}

export type Verdict = Omit<RecipientOutcome, 'messageId' | 'recipient'>;

/** What a verdict reports about the session it came from (pool.ts's Session carries these). */
export type SessionFacts = Pick<RecipientOutcome, 'tls' | 'tlsVerified' | 'tlsError' | 'tlsPolicy'> & { host: string };

/** One message's place in the batch: recipients in order, each decided at most once. */
export interface Work {
  message: OutboundMessage;
  verdicts: Map<string, Verdict | null>;
  /** Already put back once after a reused connection failed before any reply. */
  requeued: boolean;
}

// RFC 3463 codes for what we decide without a reply.
export const BAD_MAILBOX = '5.1.3';
export const BAD_SENDER = '5.1.7';
export const TOO_BIG = '5.3.4';
export const NO_ANSWER = '4.4.1';
export const BAD_CONNECTION = '4.4.2';
export const DNS_TROUBLE = '4.4.3';

/** Sets up a message's bookkeeping; addresses SMTPConnection would refuse to put on the wire bounce here. */
export function checkAddresses(message: OutboundMessage): Work {
  const verdicts = new Map<string, Verdict | null>();
  const work: Work = { message, verdicts, requeued: false };
  for (const recipient of message.recipients) if (!verdicts.has(recipient)) verdicts.set(recipient, null);
  const bad = (address: string) => /[\r\n<>\s]/.test(address);
  if (bad(message.envelopeFrom)) {
    const failure = { response: `invalid envelope sender ${JSON.stringify(message.envelopeFrom)}`, code: null, enhanced: BAD_SENDER };
    settle(work, [...verdicts.keys()], noSession('bounced', failure, null));
  }
  for (const recipient of verdicts.keys()) {
    if (recipient === '' || bad(recipient)) {
      settle(work, [recipient], noSession('bounced', { response: `invalid recipient address ${JSON.stringify(recipient)}`, code: null, enhanced: BAD_MAILBOX }, null));
    }
  }
  return work;
}

export function undecided(work: Work): string[] {
  return [...work.verdicts].filter(([, v]) => v === null).map(([r]) => r);
}

/** Decides recipients not decided yet; a recipient's first verdict in an attempt is its only one. */
export function settle(work: Work, recipients: string[], verdict: Verdict): void {
  for (const recipient of recipients) if (work.verdicts.get(recipient) === null) work.verdicts.set(recipient, verdict);
}

export function outcomes(works: Work[]): RecipientOutcome[] {
  return works.flatMap((w) => [...w.verdicts].map(([recipient, v]) => ({ messageId: w.message.id, recipient, ...v! })));
}

export function noSession(result: RecipientOutcome['result'], failure: Failure, mx: string | null): Verdict {
  const { tlsPolicy, ...reply } = failure;
  return { result, ...reply, mx, tls: false, tlsVerified: false, tlsError: null, tlsPolicy: tlsPolicy ?? 'none' };
}

export function fromSession(session: SessionFacts, result: RecipientOutcome['result'], failure: Failure): Verdict {
  const { tlsPolicy: _ignored, ...reply } = failure;
  return { result, ...reply, mx: session.host, tls: session.tls, tlsVerified: session.tlsVerified, tlsError: session.tlsError, tlsPolicy: session.tlsPolicy };
}

/** 5xx is permanent, except 503: a confused session, not a refused message. Anything else waits. */
export function classify(code: number | undefined): 'bounced' | 'deferred' {
  return code !== undefined && code >= 500 && code < 600 && code !== 503 ? 'bounced' : 'deferred';
}

export function replyOf(response: string): Failure {
  const match = /^(\d{3})(?:[ -]([245]\.\d{1,3}\.\d{1,3})(?=\s|$))?/.exec(response);
  return { response, code: match ? Number(match[1]) : null, enhanced: match?.[2] ?? null };
}

export function failureOf(err: SMTPError): Failure {
  if (err.response) return replyOf(err.response);
  return { response: err.message, code: null, enhanced: BAD_CONNECTION };
}
