// The submission listener (MAILWRIGHT_SUBMISSION_PORT, RFC 6409): applications, mail clients and Postfix
// relayhosts hand mail to the box over SMTP instead of POST /emails. TLS first: before STARTTLS, AUTH is
// neither advertised nor accepted (RFC 4954 4, catalogue AUTH-16), so a password never crosses in clear by
// our invitation. Then AUTH PLAIN or LOGIN, any user name, an API key as the password, with failures
// throttled per client address and per key (API-06). Each message is read by mailparser on the analyze
// workers (as received mail is: a message built to blow up when decoded ends a worker, not the box),
// becomes a SendRequest, and goes through send/submit like an API send (sender checks, queue, signing,
// events), Idempotency-Key included. It replies 250 only when submit() has committed.
import { createHash } from 'node:crypto';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { App } from '../context.ts';
import { ApiError, SmtpError } from '../errors.ts';
import { findKeyBySecret } from '../account/keys.ts';
import { checkSendFrom, type KeyScope } from '../account/key-scope.ts';
import { LoginThrottle } from '../account/login-throttle.ts';
import { checkAddress, type Mailbox } from '../mail/addresses.ts';
import type { Analyzer } from '../receive/analyzer.ts';
import type { SendRequest } from '../send/request.ts';
import { submit, type Submitted } from '../send/submit.ts';
import type { TlsCredentials } from './certificate.ts';
import { reportListenerErrors } from './listener-errors.ts';
import { requestFromMessage } from './request-from-message.ts';
import { MAX_UNAUTHENTICATED_COMMANDS } from './client-limits.ts';
import { clientIp, collect, limitClients, OUR_FAULT, ourFault, SessionTable, sessionDeadline, sessionLimits } from './session.ts';

/** The idempotency scope of submitted mail: its keys never replay an HTTP send, nor the reverse. */
export const IDEMPOTENCY_ENDPOINT = 'SMTP submission';

/** What a successful AUTH leaves in session.user. */
interface Sender {
  workspaceId: string;
  keyId: string;
}

interface SessionState {
  messages: number;
  deadline: NodeJS.Timeout;
  /** The key the session authenticated with, looked up again for each message so revocation bites at once. */
  secret: string | null;
  /** Its scope as of the last MAIL FROM: what each message's From is judged by. */
  scope: KeyScope;
}

// As keys.ts shows them: `re_` and 8 characters.
const KEY_PREFIX_LENGTH = 're_'.length + 8;

export function createSubmissionServer(app: App, tls: TlsCredentials, analyzer: Pick<Analyzer, 'parse'>): SMTPServer {
  const { config, store, clock, log } = app;
  const sessions = new SessionTable<SessionState>();
  const throttle = new LoginThrottle(app.store, clock, 'smtp');

  const server: SMTPServer = new SMTPServer({
    name: config.hostname,
    banner: 'Mailwright ESMTP submission',
    ...sessionLimits(config),
    authMethods: ['PLAIN', 'LOGIN'],
    authRequiredMessage: '5.7.0 Authentication required: AUTH PLAIN or LOGIN with an API key as the password',
    // The box sends to plain ASCII addresses only (mail/addresses.ts), so it does not claim RFC 6531.
    hideSMTPUTF8: true,
    key: tls.key,
    cert: tls.cert,
    logger: false,
    // Clients prove who they are with a key; a PTR lookup would only cost time.
    disableReverseLookup: true,

    onConnect(session, callback) {
      // Until STARTTLS, AUTH is not advertised and is answered like an unknown command; onSecure lifts this.
      session.disabledCommands = ['AUTH'];
      sessions.open(session.id, { messages: 0, deadline: sessionDeadline(server, session.id, config.smtpSessionTimeout, config.hostname), secret: null, scope: { permission: 'full_access' } });
      callback();
    },

    onSecure(_socket, session, callback) {
      session.disabledCommands = [];
      callback();
    },

    onClose(session) {
      sessions.close(session.id);
    },

    onAuth(auth, session, callback) {
      // Failures count per client address and per key, the key named by its non-secret prefix (LoginThrottle's
      // account). A refusal holds even for the right key, so the throttle is no guessing oracle.
      const ip = clientIp(session);
      const password = auth.password ?? '';
      const account = `key:${password.slice(0, KEY_PREFIX_LENGTH)}`;
      void throttle
        .begin(ip, account)
        .then(async (attempt) => {
          if (attempt.refuse) {
            return callback(new SmtpError(454, `4.7.0 Too many failed authentications: try again in ${attempt.retryAfterSeconds} seconds`));
          }
          try {
            await new Promise((resolve) => setTimeout(resolve, attempt.delayMs));
            const key = await app.store.read(findKeyBySecret(clock, password));
            if (!key) {
              attempt.fail();
              log.info('submission authentication failed', { session: session.id, ip, method: auth.method });
              return callback(new SmtpError(535, '5.7.8 Authentication credentials invalid: the password must be an API key (re_...) of this box'));
            }
            attempt.succeed();
            const state = sessions.find(session.id);
            if (!state) return; // the client left while we waited
            state.secret = password;
            const sender: Sender = { workspaceId: key.workspaceId, keyId: key.keyId };
            callback(null, { user: sender });
          } catch (err) {
            attempt.fail();
            throw err;
          }
        })
        .catch((err: unknown) => {
          log.error('submission authentication failed on our side', { err, session: session.id });
          callback(new SmtpError(454, '4.7.0 Temporary authentication failure, try again later'));
        });
    },

    onMailFrom(address, session, callback) {
      // The envelope sender is ignored: bounces must come back to the box, so the queue uses its own VERP
      // return path on the From domain, as for an API send.
      if (!session.secure) return callback(new SmtpError(530, '5.7.0 Must issue a STARTTLS command first'));
      const state = sessions.of(session);
      const refusedKey = () => callback(new SmtpError(530, '5.7.0 Authentication required: the API key of this session is no longer valid, reconnect with a valid one'));
      if (!state.secret) return refusedKey();
      store.read(findKeyBySecret(clock, state.secret)).then(
        (key) => {
          if (!key) return refusedKey();
          state.scope = key.scope;
          // A sending key for one domain, or an inbox key: an envelope sender it may not use is refused here already
          // (the From header is judged again at DATA); the null sender <> stays allowed.
          const refused = address.address ? scopeRefusal(state.scope, address.address) : null;
          if (refused) return callback(refused);
          if (app.disk?.low) return callback(new SmtpError(452, '4.3.1 Insufficient system storage, try again later'));
          if (state.messages >= config.smtpMaxMessages) {
            return callback(new SmtpError(452, `4.4.5 Too many messages in this session (${config.smtpMaxMessages}), reconnect to send more`));
          }
          callback();
        },
        (err: unknown) => {
          log.error('submission: the key could not be read', { err, session: session.id });
          callback(new SmtpError(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },

    onRcptTo(address, _session, callback) {
      const checked = checkAddress(address.address);
      if (!checked.ok) return callback(new SmtpError(553, `5.1.3 <${address.address}>: ${checked.reason}`));
      callback();
    },

    onData(stream, session, callback) {
      const state = sessions.of(session);
      state.messages++;
      collect(stream)
        .then(
          async (data) => {
            if (!data) return callback(new SmtpError(552, `5.3.4 Message too big: the limit is ${config.maxMessageBytes} bytes`));
            const sender = session.user as Sender;
            const answer = await submitMessage(app, analyzer, sender, state.scope, data, envelopeOf(session));
            log.info('submitted over SMTP', { session: session.id, emailId: answer.id, keyId: sender.keyId });
            callback(null, `2.0.0 Ok: queued as ${answer.id}`);
          },
          () => {
            // The client went away mid-DATA: nothing was submitted, and nobody is left to answer.
          },
        )
        .catch((err: unknown) => {
          if (err instanceof ApiError) return callback(refusal(err));
          // The analyzer's own refusals (a header over its bounds, an analysis past its budget) are replies already.
          if (err instanceof SmtpError) return callback(err);
          ourFault(log, 'submitting a message over SMTP failed', err, session.id);
          callback(new SmtpError(451, OUR_FAULT));
        });
    },
  });

  // Connections per client address and the error limit, as on MX; and the whole phase before AUTH is bounded:
  // smtp-server's maxAllowedUnauthenticatedCommands only counts while AUTH is offered, which here is only after
  // STARTTLS, so a client could NOOP in clear until the session deadline.
  limitClients(server, config, log, { listener: 'submission', beforeAuth: MAX_UNAUTHENTICATED_COMMANDS });
  reportListenerErrors(server, log, app.metrics, 'submission');
  return server;
}

/** Parse, build the request, honour Idempotency-Key, submit: resolves once the message is committed. */
async function submitMessage(app: App, analyzer: Pick<Analyzer, 'parse'>, sender: Sender, scope: KeyScope, data: Buffer, envelopeTo: Mailbox[]): Promise<Submitted> {
  const { workspaceId } = sender;
  // Keyed by workspace: one workspace's submissions cannot hold the analyze workers while another's wait.
  const parsed = await analyzer.parse(data, { client: `workspace:${workspaceId}` });
  const req = { ...requestFromMessage(parsed, envelopeTo), sentBy: 'smtp' as const, sentByKey: sender.keyId };
  checkSendFrom(scope, req.from.address);
  const key = parsed.headers['idempotency-key']?.[0];
  if (key === undefined) return submit(app, workspaceId, req);
  const started = await app.idempotency.begin(workspaceId, IDEMPOTENCY_ENDPOINT, key, fingerprint(req));
  if ('replay' in started) return started.replay.body as Submitted;
  try {
    return await submit(app, workspaceId, req, started.claim);
  } finally {
    await started.release();
  }
}

// "The same message" is the same content, recipients and headers: a client that composes it again gets a new
// Message-ID, Date and MIME boundaries, which the box replaces anyway, so they are not part of it; nor is the
// order of the RCPT commands.
function fingerprint(req: SendRequest) {
  const sorted = (addresses: string[]) => addresses.map((a) => a.toLowerCase()).sort();
  return {
    ...req,
    bcc: sorted(req.bcc.map((m) => m.address)),
    envelopeTo: sorted(req.envelopeTo ?? []),
    attachments: req.attachments.map(({ content, ...a }) => ({ ...a, sha256: createHash('sha256').update(content).digest('hex') })),
  };
}

function envelopeOf(session: SMTPServerSession): Mailbox[] {
  return session.envelope.rcptTo.flatMap((r) => {
    const checked = checkAddress(r.address);
    return checked.ok ? [checked.mailbox] : [];
  });
}

/** RFC 3463 5.7.1 (delivery not authorized): a sender address outside the key's scope; null when it may. */
function scopeRefusal(scope: KeyScope, address: string): SmtpError | null {
  try {
    checkSendFrom(scope, address);
    return null;
  } catch (err) {
    if (err instanceof ApiError) return new SmtpError(550, `5.7.1 ${err.message}`);
    throw err;
  }
}

/** The SMTP reply for what the API would answer with a 4xx or 5xx status. */
function refusal(err: ApiError): SmtpError {
  // RFC 5321 4.5.3.1.5: a reply line is at most 512 octets.
  const text = err.message.length > 400 ? `${err.message.slice(0, 400)}...` : err.message;
  switch (err.code) {
    case 'invalid_idempotent_request':
      return new SmtpError(554, '5.6.0 Idempotency-Key: already used with a different message; use a new key for a new message');
    case 'concurrent_idempotent_requests':
      return new SmtpError(451, '4.3.0 Idempotency-Key: a message with this key is still being processed; retry when it has finished');
    // The render threads are busy or the render ran past its budget (templates/render-pool.ts): try again later.
    case 'too_many_renders':
    case 'render_timeout':
      return new SmtpError(451, `4.3.0 ${text}`);
  }
  // A paused workspace (403 sending_paused) and an exhausted plan (429 quota_exceeded) are policy refusals.
  if (err.status === 403 || err.code === 'quota_exceeded') return new SmtpError(550, `5.7.1 ${text}`);
  if (err.status === 413) return new SmtpError(552, `5.3.4 ${text}`);
  if (err.status >= 500) return new SmtpError(451, OUR_FAULT);
  return new SmtpError(554, `5.6.0 ${text}`);
}
