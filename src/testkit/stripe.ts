// Test-only Stripe: an HTTPS server on loopback (a self-signed certificate made with `selfsigned`) shaped as
// Stripe's REST API documents POST /v1/checkout/sessions (form-encoded, `Authorization: Bearer <secret key>`),
// recording every request; and the sending side of Stripe's webhooks: events signed as Stripe signs them.
// Written independently of src/billing/stripe.ts, so a mistake there is not mirrored here.
import { createHmac, randomBytes } from 'node:crypto';
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';

export interface StripeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body as sent. */
  raw: string;
  /** The body decoded as a form: every field name (`line_items[0][price_data][currency]`) and its value. */
  form: Record<string, string>;
}

export interface StripeSession {
  id: string;
  object: 'checkout.session';
  url: string;
  mode: string;
  status: 'open' | 'complete';
  payment_status: 'unpaid' | 'paid' | 'no_payment_required';
  client_reference_id: string | null;
  metadata: Record<string, string>;
  subscription: string | null;
  amount_total: number;
  currency: string;
}

export async function startStripe(opts: { secretKey?: string; hostname?: string } = {}): Promise<LocalStripe> {
  const hostname = opts.hostname ?? 'api.stripe.test';
  const now = Date.now();
  const made = await generate([{ name: 'commonName', value: hostname }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 24 * 60 * 60 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: hostname }, { type: 7, ip: '127.0.0.1' }] },
    ],
  } as Parameters<typeof generate>[1]);
  const server = https.createServer({ key: made.private, cert: made.cert });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return new LocalStripe(server, hostname, made.cert, opts.secretKey ?? `sk_test_${randomBytes(12).toString('hex')}`);
}

export class LocalStripe {
  readonly port: number;
  /** https://127.0.0.1:<port>: MAILWRIGHT_STRIPE_API_URL (no DNS needed). */
  readonly url: string;
  /** https://<hostname>:<port>, for a test that serves the name from its DNS server. */
  readonly namedUrl: string;
  /** The certificate PEM: startTestApp's fetchCa. */
  readonly ca: string;
  readonly secretKey: string;
  readonly requests: StripeRequest[] = [];
  readonly sessions = new Map<string, StripeSession>();
  /** When set, every request is answered with it (a Stripe error, an outage). */
  private forced: { status: number; body: string; headers?: Record<string, string> } | null = null;

  constructor(
    private readonly server: https.Server,
    hostname: string,
    ca: string,
    secretKey: string,
  ) {
    this.port = (server.address() as AddressInfo).port;
    this.url = `https://127.0.0.1:${this.port}`;
    this.namedUrl = `https://${hostname}:${this.port}`;
    this.ca = ca;
    this.secretKey = secretKey;
    server.on('request', (req, res) => void this.handle(req, res));
    server.on('tlsClientError', () => {});
  }

  answerWith(status: number, body: unknown, headers?: Record<string, string>): this {
    this.forced = { status, body: typeof body === 'string' ? body : JSON.stringify(body), headers };
    return this;
  }

  reset(): this {
    this.forced = null;
    this.requests.length = 0;
    return this;
  }

  /** The event Stripe sends when the customer has paid the session (as its docs show it, trimmed). */
  completedEvent(sessionId: string, type = 'checkout.session.completed'): { id: string; object: 'event'; type: string; created: number; data: { object: StripeSession } } {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    session.status = 'complete';
    session.payment_status = 'paid';
    session.subscription ??= `sub_${randomBytes(8).toString('hex')}`;
    return { id: `evt_${randomBytes(12).toString('hex')}`, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object: { ...session } } };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    const form = Object.fromEntries(new URLSearchParams(raw));
    this.requests.push({ method: req.method ?? '', path, headers: req.headers, raw, form });
    if (this.forced) return send(res, this.forced.status, this.forced.body, this.forced.headers);
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
      return send(res, 401, JSON.stringify({ error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_****' } }));
    }
    if (req.method === 'POST' && path === '/v1/checkout/sessions') {
      if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
        return send(res, 400, JSON.stringify({ error: { type: 'invalid_request_error', message: 'Invalid request (check your POST parameters)' } }));
      }
      const id = `cs_test_${randomBytes(16).toString('hex')}`;
      const metadata: Record<string, string> = {};
      for (const [name, value] of Object.entries(form)) {
        const m = /^metadata\[([^\]]+)\]$/.exec(name);
        if (m) metadata[m[1]!] = value;
      }
      const session: StripeSession = {
        id,
        object: 'checkout.session',
        url: `https://checkout.stripe.test/c/pay/${id}`,
        mode: form.mode ?? 'payment',
        status: 'open',
        payment_status: 'unpaid',
        client_reference_id: form.client_reference_id ?? null,
        metadata,
        subscription: null,
        amount_total: Number(form['line_items[0][price_data][unit_amount]'] ?? 0),
        currency: form['line_items[0][price_data][currency]'] ?? 'usd',
      };
      this.sessions.set(id, session);
      return send(res, 200, JSON.stringify(session));
    }
    send(res, 404, JSON.stringify({ error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path})` } }));
  }
}

/** The Stripe-Signature header Stripe would send for this body: `t=<unix seconds>,v1=<HMAC-SHA256 hex of "t.body">`. */
export function stripeSignature(body: string, secret: string, timestampSeconds = Math.floor(Date.now() / 1000)): string {
  const v1 = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${timestampSeconds},v1=${v1}`;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}
