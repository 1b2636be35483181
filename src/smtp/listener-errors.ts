// Where an SMTP listener's 'error' events go. A client's broken TLS (garbage after STARTTLS, no protocol or
// cipher in common, a port scanner) is the client's noise, not our fault: a debug line and a counter. Another
// socket error of a client stays a warning; an error of the listener itself (accepting failed) is ours: error.
import type { SMTPServer } from 'smtp-server';
import type { Log } from '../log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { clientAddress } from './client-limits.ts';

/** What smtp-server 3.21 puts on the errors it emits (SMTPConnection._onError, normalizeTLSError). */
interface ListenerError extends Error {
  code?: string;
  /** OpenSSL's library and reason ('SSL routines', 'http request'), which node copies onto TLS errors. */
  library?: string;
  reason?: string;
  /** Set by SMTPConnection._onError: the error came from one client's connection. */
  remoteAddress?: string;
  /** Set by normalizeTLSError on every error of a connection's TLS socket, handshake or later. */
  meta?: { protocol?: string; stage?: string; remoteAddress?: string };
}

/** Whether an error is a client's TLS failing: smtp-server's mark, or OpenSSL's own (ERR_SSL_*). */
export function isTlsFailure(err: ListenerError): boolean {
  return err.meta?.stage === 'connect' || /^ERR_SSL_/.test(err.code ?? '') || err.library === 'SSL routines';
}

export function reportListenerErrors(server: SMTPServer, log: Log, metrics: Metrics | undefined, listener: 'mx' | 'submission'): void {
  // smtp-server emits a failed handshake twice, the same object each time (from the TLS socket's 'error' and
  // '_tlsError' events): counted once.
  const seen = new WeakSet<object>();
  server.on('error', (err: ListenerError) => {
    if (typeof err === 'object' && err !== null) {
      if (seen.has(err)) return;
      seen.add(err);
    }
    const raw = err.remoteAddress ?? err.meta?.remoteAddress;
    const ip = raw === undefined ? undefined : clientAddress(raw);
    // Binding the port failed: start/front-doors.ts's listen() refuses to start with a message naming the setting; a stack
    // trace logged here first would only bury it.
    if ((err as NodeJS.ErrnoException).syscall === 'listen') return;
    if (isTlsFailure(err)) {
      metrics?.smtpTlsFailure(listener);
      log.debug('smtp tls handshake failed', { listener, ip, code: err.code, reason: err.reason ?? err.message });
    } else if (ip !== undefined) {
      log.warn('smtp connection error', { listener, ip, err });
    } else {
      log.error('smtp listener error', { listener, err });
    }
  });
}
