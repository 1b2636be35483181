// One SMTP transaction over an open session (RFC 5321 3.3: MAIL, RCPT for each recipient, DATA), through
// nodemailer's SMTPConnection: each recipient's answer becomes a verdict (outcome.ts). It must not open or
// pool connections, retry later (the queue does), or throw for what the server said.
import { isAscii } from 'node:buffer';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SMTPConnectionEnvelope, SMTPConnectionSendInfo, SMTPError } from 'nodemailer/lib/smtp-connection';
import { BAD_CONNECTION, NO_ANSWER, TOO_BIG, classify, failureOf, fromSession, replyOf, settle, undecided, type Failure, type Work } from './outcome.ts';
import type { Session } from './pool.ts';

/** The envelope as SMTPConnection leaves it after send(): it records the refused MAIL FROM here too. */
type LiveEnvelope = SMTPConnectionEnvelope & { mailError?: SMTPError };

/** The session ended under the transaction; `untouched` when the server had answered nothing about the message. */
export interface Lost {
  failure: Failure;
  untouched: boolean;
}

/**
 * One message on one session: MAIL, RCPT each undecided recipient, DATA; again for recipients refused as too
 * many. Returns `lost` when the session ended under it, leaving the undecided recipients to the caller.
 */
export async function transact(session: Session, work: Work): Promise<{ lost?: Lost }> {
  const { message } = work;
  let pending = undecided(work);
  let first = true;
  // Declared only when the server offers 8BITMIME; the bytes go out as they are either way.
  const use8BitMime = !isAscii(message.raw);
  while (pending.length > 0) {
    const envelope = {
      from: message.envelopeFrom,
      to: pending,
      size: message.raw.length,
      use8BitMime,
    } as LiveEnvelope;
    const { err, info } = await send(session.conn, envelope, message.raw);
    // SMTPConnection fills the envelope object it was given: accepted, rejected (with rejectedErrors) and
    // mailError. The error alone never says which recipients had been accepted.
    const accepted = envelope.accepted ?? [];
    const rejected = envelope.rejectedErrors ?? [];
    const lost = session.dead || session.conn.destroyed;
    const tooMany: SMTPError[] = [];

    if (err && envelope.mailError) {
      const mail = envelope.mailError;
      // A 421 is the session ending, not an answer about this message: the caller decides what that means.
      if (!(lost && mail.responseCode === 421)) settle(work, pending, fromSession(session, classify(mail.responseCode), failureOf(mail)));
    } else {
      for (const refusal of rejected) {
        const recipient = refusal.recipient ?? '';
        // RFC 5321 4.5.3.1.10: 452 means "too many recipients", and a 552 at RCPT must be read the same way.
        if (refusal.responseCode === 452 || refusal.responseCode === 552) tooMany.push(refusal);
        // A recipient refused before the connection dropped keeps its answer (catalogue DUR-17: a pipelined 550
        // and then a close is still a permanent failure for that address).
        else settle(work, [recipient], fromSession(session, classify(refusal.responseCode), failureOf(refusal)));
      }
      if (!err) settle(work, accepted, fromSession(session, 'delivered', replyOf((info as SMTPConnectionSendInfo).response)));
      else if (err.code === 'EMESSAGE' && !err.response) {
        // SMTPConnection's own refusal: larger than the SIZE the server advertised (RFC 1870).
        settle(work, pending, fromSession(session, 'bounced', { response: err.message, code: null, enhanced: TOO_BIG }));
      } else if (err.responseCode && accepted.length > 0) {
        // The DATA command or the final reply: it applies to every recipient the server had taken.
        settle(work, accepted, fromSession(session, classify(err.responseCode), failureOf(err)));
      }
    }

    const delivered = !err && accepted.length > 0;
    if (tooMany.length > 0 && delivered && !lost) {
      // Progress was made: the refused ones go at once in a transaction of their own.
      pending = tooMany.map((r) => r.recipient ?? '');
      first = false;
      continue;
    }
    for (const refusal of tooMany) settle(work, [refusal.recipient ?? ''], fromSession(session, 'deferred', failureOf(refusal)));
    if (lost) {
      const failure = err ? failureOf(err) : { response: 'connection closed', code: null, enhanced: BAD_CONNECTION };
      const untouched = session.reused && first && accepted.length === 0 && rejected.length === 0 && (!err?.responseCode || err.responseCode === 421);
      return { lost: { failure, untouched } };
    }
    // A refused transaction may still be open (MAIL taken, no recipient, DATA refused): start the next clean.
    if (err && !(await reset(session.conn))) {
      session.conn.close();
      return { lost: { failure: { response: 'RSET failed', code: null, enhanced: BAD_CONNECTION }, untouched: false } };
    }
    break;
  }
  // Anything still undecided here was refused in a way the branches above left open: it waits.
  const rest = undecided(work);
  if (rest.length > 0) settle(work, rest, fromSession(session, 'deferred', { response: 'not accepted in this attempt', code: null, enhanced: NO_ANSWER }));
  return {};
}

function send(conn: SMTPConnection, envelope: LiveEnvelope, raw: Buffer): Promise<{ err: SMTPError | null; info: SMTPConnectionSendInfo | null }> {
  return new Promise((resolve) => {
    conn.send(envelope, raw, (err, info) => resolve(err ? { err, info: null } : { err: null, info }));
  });
}

/** RSET (RFC 5321 4.1.1.5): abandons a transaction the server may still hold open. */
function reset(conn: SMTPConnection): Promise<boolean> {
  if (conn.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => conn.reset((err) => resolve(!err)));
}
