// Test-only Domain Connect DNS provider: an HTTPS server on loopback (self-signed certificate made by the openssl
// CLI at start) serving settings, the template query and the apply page, misbehaving on request.
// It must never apply DNS changes or talk to anything but its clients; it records every request it sees.

import { execFile } from 'node:child_process';
import { verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface ProviderRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  /** Raw query string as it arrived (what a real provider verifies a signature over). */
  rawQuery: string;
  headers: IncomingHttpHeaders;
  /** The TLS SNI name the client sent, or null (clients send none for an IP address). */
  servername: string | null;
}

export interface DomainConnectProviderOptions {
  /** Name the certificate is issued for (and the URL uses). Default 'dc.provider.test'. */
  hostname?: string;
  /** Loopback address to listen on; it also goes into the certificate. Default '127.0.0.1'. */
  bindAddress?: string;
}

type SettingsSource = Record<string, unknown> | ((zone: string) => Record<string, unknown>);

type Mode =
  | { kind: 'normal' }
  | { kind: 'status'; status: number; body: string; contentType: string }
  | { kind: 'redirect'; status: number; location: string }
  | { kind: 'huge'; bytes: number; declareLength: boolean }
  | { kind: 'stall' };

const SETTINGS_PATH = /\/v2\/([^/]+)\/settings$/;
const TEMPLATE_PATH = /\/v2\/domainTemplates\/providers\/([^/]+)\/services\/([^/]+)(\/apply)?$/;

export async function startDomainConnectProvider(opts: DomainConnectProviderOptions = {}): Promise<DomainConnectProvider> {
  const hostname = opts.hostname ?? 'dc.provider.test';
  const bindAddress = opts.bindAddress ?? '127.0.0.1';
  const dir = await mkdtemp(join(tmpdir(), 'mailwright-dc-'));
  try {
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    const ips = [...new Set(['127.0.0.1', bindAddress])].map((ip) => `IP:${ip}`).join(',');
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile,
      '-subj', `/CN=${hostname}`, '-addext', `subjectAltName=DNS:${hostname},${ips}`, '-days', '1',
    ]);
    const [key, cert] = await Promise.all([readFile(keyFile, 'utf8'), readFile(certFile, 'utf8')]);
    const server = https.createServer({ key, cert });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, bindAddress, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new DomainConnectProvider(server, hostname, bindAddress, cert, dir);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export class DomainConnectProvider {
  readonly hostname: string;
  readonly address: string;
  readonly port: number;
  /** https://<hostname>:<port> (no trailing slash). */
  readonly url: string;
  /** The certificate PEM: pass it as FetchPolicy.ca. */
  readonly ca: string;
  readonly requests: ProviderRequest[] = [];
  /** Whether the template query answers 200 (supported) or 404, for any providerId/serviceId. */
  templateSupported = true;

  private settings: SettingsSource;
  private mode: Mode = { kind: 'normal' };
  private signingKey: KeyObject | null = null;
  private readonly server: https.Server;
  private readonly dir: string;
  private readonly stalled = new Set<ServerResponse>();
  private closing: Promise<void> | undefined;

  constructor(server: https.Server, hostname: string, address: string, ca: string, dir: string) {
    this.server = server;
    this.hostname = hostname;
    this.address = address;
    this.port = (server.address() as AddressInfo).port;
    this.url = `https://${hostname}:${this.port}`;
    this.ca = ca;
    this.dir = dir;
    this.settings = (zone) => this.defaultSettings(zone);
    server.on('request', (req, res) => this.handle(req, res));
    // A client that gives up mid-handshake must not take the test down.
    server.on('tlsClientError', () => {});
  }

  /** What a well-behaved provider would answer for this zone: UX under /ux, API under /api, on this server. */
  defaultSettings(zone: string): Record<string, unknown> {
    return {
      providerId: 'provider.test',
      providerName: 'Test DNS',
      providerDisplayName: 'Test DNS Provider',
      urlSyncUX: `${this.url}/ux`,
      urlAsyncUX: `${this.url}/async`,
      urlAPI: `${this.url}/api`,
      width: 640,
      height: 480,
      urlControlPanel: `${this.url}/panel/${zone}`,
      nameServers: ['ns1.provider.test', 'ns2.provider.test'],
    };
  }

  settingsFor(zone: string): Record<string, unknown> {
    return typeof this.settings === 'function' ? this.settings(zone) : this.settings;
  }

  setSettings(source: SettingsSource): this {
    this.settings = source;
    return this;
  }

  setTemplateSupported(supported: boolean): this {
    this.templateSupported = supported;
    return this;
  }

  /** Every request is answered with this status and body until reset(). */
  setStatus(status: number, body = '', contentType = 'application/json'): this {
    this.mode = { kind: 'status', status, body, contentType };
    return this;
  }

  redirectTo(location: string, status = 302): this {
    this.mode = { kind: 'redirect', status, location };
    return this;
  }

  /** A 200 body of this many bytes (spaces), chunked unless declareLength (then with Content-Length). */
  sendHugeBody(bytes = 1024 * 1024, declareLength = false): this {
    this.mode = { kind: 'huge', bytes, declareLength };
    return this;
  }

  /** Accept requests and never answer them (until close()). */
  stall(): this {
    this.mode = { kind: 'stall' };
    return this;
  }

  /** With a key, the apply page answers 200 only to a correctly signed request (403 otherwise), as a provider would. */
  requireSignature(publicKey: KeyObject | null): this {
    this.signingKey = publicKey;
    return this;
  }

  reset(): this {
    this.mode = { kind: 'normal' };
    this.settings = (zone) => this.defaultSettings(zone);
    this.templateSupported = true;
    this.signingKey = null;
    this.requests.length = 0;
    return this;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const res of this.stalled) res.destroy();
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
      await rm(this.dir, { recursive: true, force: true });
    })();
    return this.closing;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const rawQuery = q < 0 ? '' : target.slice(q + 1);
    const servername = (req.socket as TLSSocket).servername;
    this.requests.push({
      method: req.method ?? '',
      path,
      query: Object.fromEntries(new URLSearchParams(rawQuery)),
      rawQuery,
      headers: req.headers,
      servername: typeof servername === 'string' ? servername : null,
    });

    const mode = this.mode;
    switch (mode.kind) {
      case 'stall':
        this.stalled.add(res);
        res.on('close', () => this.stalled.delete(res));
        return;
      case 'status':
        return send(res, mode.status, mode.body, mode.contentType);
      case 'redirect':
        res.writeHead(mode.status, { location: mode.location, 'content-length': '0' });
        res.end();
        return;
      case 'huge':
        return sendHuge(res, mode.bytes, mode.declareLength);
      case 'normal':
        return this.answer(path, rawQuery, res);
    }
  }

  private answer(path: string, rawQuery: string, res: ServerResponse): void {
    const settings = SETTINGS_PATH.exec(path);
    if (settings) return send(res, 200, JSON.stringify(this.settingsFor(decodeURIComponent(settings[1]!))));
    const template = TEMPLATE_PATH.exec(path);
    if (template && !template[3]) {
      // Spec "Query Supported Template": 200 without a body means supported, 404 not.
      return this.templateSupported ? send(res, 200, '') : send(res, 404, '<html><body>Not Found</body></html>', 'text/html');
    }
    if (template && template[3]) {
      if (this.signingKey && !signatureValid(rawQuery, this.signingKey)) return send(res, 403, JSON.stringify({ error: 'invalid signature' }));
      return send(res, 200, JSON.stringify({ consent: true, providerId: decodeURIComponent(template[1]!), serviceId: decodeURIComponent(template[2]!) }));
    }
    send(res, 404, JSON.stringify({ error: 'not found' }));
  }
}

/** Written independently of src/dns/domain-connect.ts: everything before "&sig=" is the signed data. */
function signatureValid(rawQuery: string, publicKey: KeyObject): boolean {
  const at = rawQuery.indexOf('&sig=');
  if (at < 0) return false;
  const sig = rawQuery.slice(at + 5).split('&')[0]!;
  return verify('sha256', Buffer.from(rawQuery.slice(0, at)), publicKey, Buffer.from(decodeURIComponent(sig), 'base64'));
}

function send(res: ServerResponse, status: number, body: string, contentType = 'application/json'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function sendHuge(res: ServerResponse, bytes: number, declareLength: boolean): void {
  res.writeHead(200, declareLength ? { 'content-type': 'application/json', 'content-length': String(bytes) } : { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(16 * 1024, 0x20);
  let left = bytes;
  const pump = () => {
    while (left > 0) {
      const piece = chunk.subarray(0, Math.min(chunk.length, left));
      left -= piece.length;
      if (!res.write(piece)) return void res.once('drain', pump);
    }
    res.end();
  };
  // The client hangs up once it has seen too much; that is the point, not an error.
  res.on('error', () => {});
  pump();
}
