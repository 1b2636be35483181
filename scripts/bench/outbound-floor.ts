// The libraries' floor for outbound mail (goal 3): each message composed by the box's compose()
// (nodemailer's MailComposer), DKIM-signed by its sign() (mailauth, the parsed key kept as the sign threads keep
// it) and sent by nodemailer's SMTPConnection over `lanes` kept-open sessions to the sink, all on this one thread,
// with no HTTP intake, no queue, no SQLite and nothing stored. What it spends per message is what the mandated
// libraries cost before the box does any work of its own; outbound.ts measures it in the same run as Postfix +
// OpenDKIM to show how far a goal set as a ratio to them can be reached on the machine at hand.
// Run by outbound.ts: node --import tsx outbound-floor.ts '<json: FloorJob>'; it posts { seconds, cpuMicros } over
// IPC when the last message has its 250, then exits.
import { connect } from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { compose } from '../../src/mail/compose.ts';
import { sign } from '../../src/mail/sign.ts';
import { rememberParsedKeys } from '../../src/mail/parsed-keys.ts';

export interface FloorJob {
  sinkPort: number;
  count: number;
  lanes: number;
  from: { name: string; address: string };
  recipientDomain: string;
  subject: string;
  text: string;
  key: { domain: string; selector: string; privateKey: string };
}

const job = JSON.parse(process.argv[2] ?? '{}') as FloorJob;
rememberParsedKeys();

function open(): Promise<SMTPConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect(job.sinkPort, '127.0.0.1', () => {
      const conn = new SMTPConnection({ connection: socket, name: 'floor.bench.test', logger: false });
      conn.on('error', reject);
      conn.connect(() => resolve(conn));
    });
    socket.once('error', reject);
  });
}

function send(conn: SMTPConnection, to: string, raw: Buffer): Promise<void> {
  return new Promise((resolve, reject) => conn.send({ from: job.from.address, to: [to] }, raw, (err) => (err ? reject(err) : resolve())));
}

async function message(n: number): Promise<{ to: string; raw: Buffer }> {
  const to = `f${n}@${job.recipientDomain}`;
  const raw = await compose({
    messageId: `${n}.floor@${job.key.domain}`,
    date: Date.now(),
    from: job.from,
    to: [{ address: to }],
    cc: [],
    replyTo: [],
    subject: `${job.subject} ${n}`,
    text: job.text,
    headers: {},
    attachments: [],
  });
  return { to, raw: await sign(raw, job.key) };
}

const conns = await Promise.all(Array.from({ length: job.lanes }, open));
let next = 0;
const cpu0 = process.cpuUsage();
const started = performance.now();
await Promise.all(
  conns.map(async (conn) => {
    for (let n = next++; n < job.count; n = next++) {
      const m = await message(n);
      await send(conn, m.to, m.raw);
    }
  }),
);
const used = process.cpuUsage(cpu0);
process.send!({ seconds: (performance.now() - started) / 1000, cpuMicros: used.user + used.system }, () => {
  for (const conn of conns) conn.quit();
  process.exit(0);
});
