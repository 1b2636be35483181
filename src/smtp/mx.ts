// The MX listener on port 25 (smtp-server). It answers as MAILWRIGHT_HOSTNAME, advertises and enforces
// SIZE, and refuses every recipient that is not the box's own: until a domain is set up for inbound mail
// (issue: receiving) nothing is local, so every RCPT is relaying and gets 554 5.7.1. Never an open relay.
import { SMTPServer } from 'smtp-server';
import type { App } from '../context.ts';
import { SmtpError } from '../errors.ts';
import type { TlsCredentials } from './certificate.ts';

export function createMxServer(app: App, tls: TlsCredentials): SMTPServer {
  const { config, log } = app;
  const server = new SMTPServer({
    name: config.hostname,
    banner: 'Mailwright ESMTP',
    size: config.maxMessageBytes,
    disabledCommands: ['AUTH'],
    key: tls.key,
    cert: tls.cert,
    logger: false,
    // smtp-server would ask the system's resolver; PTR lookups belong to app.dns (the configured servers).
    disableReverseLookup: true,
    maxClients: 200,
    socketTimeout: 60_000,
    closeTimeout: 30_000,
    onRcptTo(address, _session, callback) {
      callback(new SmtpError(554, `5.7.1 <${address.address}>: Relay access denied`));
    },
  });
  server.on('error', (err) => log.warn('smtp connection error', { err }));
  return server;
}
