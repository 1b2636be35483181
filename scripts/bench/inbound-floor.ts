// The libraries' floor for inbound mail (goal 4): an SMTP server of smtp-server that runs each
// message through the box's own analyze() (mailauth's SPF, DKIM and DMARC, and mailparser) on its one thread,
// then answers 250, storing nothing: no worker threads, no classification, no SQLite, no fsync. What it spends
// per message is what the mandated libraries cost before the box does any work of its own, so the inbound
// benchmark measures it beside Postfix to show how far a goal set as a ratio to Postfix can be reached on the
// machine at hand. DNS answers come from a Map (map-dns.ts), as the box's warm cache gives them.
// Run by inbound.ts: node --import tsx inbound-floor.ts '<json: hostname, client, sender domain>'; it sends
// { port } over IPC once listening and exits on SIGTERM.
import { SMTPServer } from 'smtp-server';
import { analyze } from '../../src/receive/analyze.ts';
import { mapLookup, senderRecords } from './map-dns.ts';

interface FloorOptions {
  hostname: string;
  /** The client's HELO name, with an A record for 127.0.0.1 and 127.0.0.1's PTR. */
  client: string;
  /** The envelope sender's domain: SPF for 127.0.0.1 and DMARC p=none. */
  senderDomain: string;
}

const opts = JSON.parse(process.argv[2] ?? '{}') as FloorOptions;

const dns = mapLookup(senderRecords(opts.client, opts.senderDomain));

const server = new SMTPServer({
  name: opts.hostname,
  disabledCommands: ['AUTH', 'STARTTLS'],
  disableReverseLookup: true,
  logger: false,
  maxClients: 1000,
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const ctx = { ip: session.remoteAddress, helo: session.hostNameAppearsAs, mailFrom, hostname: opts.hostname, dns };
      analyze(Buffer.concat(chunks), ctx).then(
        () => callback(),
        (err: Error) => callback(Object.assign(new Error(`451 4.3.0 ${err.message}`), { responseCode: 451 })),
      );
    });
  },
});

server.listen(0, '127.0.0.1', () => {
  const address = server.server.address();
  process.send!({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
