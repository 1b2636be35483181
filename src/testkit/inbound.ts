// Test-only: an inbound scene. The outbound scene (DNS server, SMTP sink, app) plus a workspace domain whose
// inbound setup is `ready` with one inbox, helpers to send a message over real SMTP to the MX listener and
// to read what was stored, and sender domains with SPF, DKIM and DMARC published in the test DNS server.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { sign } from '../mail/sign.ts';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { request } from './app.ts';
import { BOX, startOutboundScene, type OutboundScene } from './outbound.ts';
import { RawSmtp, type SmtpReply } from './smtp-client.ts';
import { unpackMessage, unpackText, type StoredBody } from '../mail/packing.ts';
import { all } from '../db/query.ts';

export interface InboundScene extends OutboundScene {
  domain: { id: string; name: string };
  inbox: { id: string; address: string };
  /** Creates a domain of the workspace with inbound `ready` (and sending verified). */
  inboundDomain(name: string): Promise<{ id: string; name: string }>;
  createInbox(domainId: string, localPart: string): Promise<{ id: string; address: string }>;
  /** One SMTP transaction; the reply to the final dot (or the first refusal). */
  deliver(raw: string | Buffer, opts: { from?: string; to?: string[]; helo?: string; localAddress?: string }): Promise<SmtpReply>;
  /**
   * A message to the scene's inbox over SMTP, as a sender would write it: `From` Bob unless given, a body of
   * words naming the subject unless given, any `headers` (lines) before the blank line. Fails unless it gets a
   * 250; answers the stored email's id.
   */
  receive(subject: string, opts?: { from?: string; headers?: string; body?: string }): Promise<string>;
  /** Publishes SPF (127.0.0.1 allowed), a DKIM key and a DMARC policy for a sending domain; returns a signer. */
  senderDomain(name: string, dmarc?: string): { sign(raw: string): Promise<Buffer> };
  /** A read-only connection to the app's SQLite database, for tests of what only SQLite has. */
  readDb(): Database.Database;
  /**
   * Received emails in the app's store (either engine): the rows a test checks, raw bytes and text unpacked.
   * `where` is portable SQL on `e` (emails).
   */
  stored(where?: string, ...params: unknown[]): Promise<ReceivedRow[]>;
}

export interface ReceivedRow {
  id: string;
  workspace_id: string;
  inbox_id: string;
  thread_id: string;
  message_id: string;
  subject: string;
  from_address: string;
  category: string;
  important: number;
  classification: string;
  authentication: string;
  raw: Buffer;
  text_body: string | null;
}

export async function startInboundScene(opts: Parameters<typeof startOutboundScene>[0] = {}): Promise<InboundScene> {
  const scene = await startOutboundScene(opts);
  const { t, dns, key } = scene;

  const inboundDomain = async (name: string) => {
    const d = await scene.verifiedDomain(name);
    await request(`${t.api}/domains/${d.id}/inbound/setup`, { method: 'POST', key });
    dns.set(name, 'MX', [{ preference: 10, exchange: BOX }]);
    const v = await request(`${t.api}/domains/${d.id}/inbound/verify`, { method: 'POST', key });
    if (v.body.status !== 'ready') throw new Error(`inbound for ${name} is not ready: ${JSON.stringify(v.body)}`);
    return { id: d.id, name };
  };
  const createInbox = async (domainId: string, localPart: string) => {
    const r = await request(`${t.api}/inboxes`, { body: { domain_id: domainId, local_part: localPart, name: localPart }, key });
    if (r.status !== 201) throw new Error(`could not create inbox ${localPart}: ${JSON.stringify(r.body)}`);
    return { id: r.body.id as string, address: r.body.address as string };
  };

  const domain = await inboundDomain('in.example');
  const inbox = await createInbox(domain.id, 'hello');
  let db: Database.Database | null = null;
  const readDb = () => (db ??= new Database(join(t.dataDir, 'mailwright.db'), { readonly: true }));

  const self: InboundScene = {
    ...scene,
    domain,
    inbox,
    inboundDomain,
    createInbox,
    async deliver(raw, { from = 'alice@sender.example', to = [inbox.address], helo = 'client.sender.example', localAddress }) {
      const c = await RawSmtp.open(t.smtpPort, '127.0.0.1', localAddress);
      try {
        await c.read();
        await c.command(`EHLO ${helo}`);
        const mail = await c.command(`MAIL FROM:<${from}>`);
        if (mail.code !== 250) return mail;
        let accepted = 0;
        let refusal: SmtpReply | null = null;
        for (const rcpt of to) {
          const reply = await c.command(`RCPT TO:<${rcpt}>`);
          if (reply.code === 250) accepted++;
          else refusal ??= reply;
        }
        if (!accepted) return refusal!;
        const data = await c.command('DATA');
        if (data.code !== 354) return data;
        const body = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.replace(/\r?\n/g, '\r\n'));
        c.write(Buffer.concat([dotStuff(body), Buffer.from(body.subarray(-2).toString() === '\r\n' ? '.\r\n' : '\r\n.\r\n')]));
        const reply = await c.read(30_000);
        await c.command('QUIT').catch(() => undefined);
        return reply;
      } finally {
        c.close();
      }
    },
    async receive(subject, { from = 'Bob <bob@sender.example>', headers = '', body = `Words of ${subject}.` } = {}) {
      const head = `From: ${from}\nTo: ${inbox.address}\nSubject: ${subject}\nMessage-ID: <${randomUUID()}@sender.example>\n${headers ? `${headers.replace(/\n$/, '')}\n` : ''}`;
      const reply = await self.deliver(`${head}\n${body}\n`, {});
      const id = reply.code === 250 ? /queued as (em_\w+)/.exec(reply.text)?.[1] : undefined;
      if (!id) throw new Error(`"${subject}" was not received: ${reply.code} ${reply.text}`);
      return id;
    },
    senderDomain(name, dmarc = 'v=DMARC1; p=reject') {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
      dns.set(name, 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
      dns.set(`sel._domainkey.${name}`, 'TXT', [`v=DKIM1; k=rsa; p=${pub}`]);
      dns.set(`_dmarc.${name}`, 'TXT', [dmarc]);
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      return {
        async sign(raw) {
          const message = Buffer.from(raw.replace(/\r?\n/g, '\r\n'));
          return sign(message, { domain: name, selector: 'sel', privateKey: pem });
        },
      };
    },
    readDb,
    async stored(where = 'true', ...params) {
      const rows = await t.app.store.read(
        all<Omit<ReceivedRow, 'text_body'> & { text_body: StoredBody; html_body?: StoredBody }>(
          `SELECT e.*, c.raw, c.text_body, c.html_body FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.direction = 'in' AND (${where}) ORDER BY e.id`,
          ...params,
        ),
      );
      return rows.map(({ html_body: html = null, ...r }) => ({
        ...r,
        raw: r.raw && unpackMessage(r.raw, { text: r.text_body, html }),
        text_body: unpackText(r.text_body),
      }));
    },
    async stop() {
      db?.close();
      await scene.stop();
    },
  };
  return self;
}

/** RFC 5321 4.5.2: a line starting with "." gets another one. */
function dotStuff(body: Buffer): Buffer {
  return Buffer.from(body.toString('latin1').replace(/(^|\r\n)\./g, '$1..'), 'latin1');
}
