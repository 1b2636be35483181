// Test-only: an outbound scene for sending tests. A test DNS server that knows the box, a verified sending
// domain, a recipient domain whose MX is an SMTP sink on 127.0.0.2, and a helper that checks a delivered
// message's DKIM signature with mailauth against the key published in that DNS server.
import { dkimVerify } from 'mailauth';
import { startDnsServer, type DnsServer } from './dns-server.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';
import { request, seedWorkspace, startTestApp, type TestApp } from './app.ts';
import { createResolver } from '../dns/resolver.ts';
import type { Clock } from '../clock.ts';

export const BOX = 'mx.mailwright.test';

export interface OutboundScene {
  dns: DnsServer;
  sink: SmtpSink;
  t: TestApp;
  key: string;
  /** The seeded owner's login (password TEST_PASSWORD), for a signed-in browser. */
  email: string;
  /** Verifies a domain in the app's workspace: publishes its records and calls verify. */
  verifiedDomain(name: string, key?: string): Promise<{ id: string; records: Array<{ record: string; name: string; value: string }> }>;
  /** A recipient domain whose MX is the sink (or the given host on 127.0.0.x). */
  routeTo(domain: string, ip?: string): void;
  send(body: unknown, headers?: Record<string, string>): ReturnType<typeof request>;
  events(emailId: string): Promise<Array<{ type: string; recipient: string; data: Record<string, unknown> }>>;
  /** mailauth's verdict on the first DKIM signature, and that signature's h= list (lower case). */
  dkim(raw: Buffer): Promise<{ status: string; signingDomain: string; signedHeaders: string[] }>;
  stop(): Promise<void>;
}

export async function startOutboundScene(opts: { env?: Record<string, string>; sink?: { starttls?: boolean }; clock?: Clock; measureFreeSpace?: (dir: string) => number } = {}): Promise<OutboundScene> {
  const dns = await startDnsServer();
  dns.add(BOX, 'A', '127.0.0.1');
  const sink = await startSmtpSink({ host: '127.0.0.2', starttls: opts.sink?.starttls ?? false });
  const t = await startTestApp({
    env: {
      MAILWRIGHT_DNS_SERVERS: dns.address,
      MAILWRIGHT_MTA_PORT: String(sink.port),
      MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true',
      MAILWRIGHT_RATE_LIMIT: '0',
      ...opts.env,
    },
    clock: opts.clock,
    measureFreeSpace: opts.measureFreeSpace,
  });
  const { key, email } = await seedWorkspace(t);
  const resolver = createResolver([dns.address]);
  const scene: OutboundScene = {
    dns,
    sink,
    t,
    key,
    email,
    async verifiedDomain(name, k = key) {
      const d = (await request(`${t.api}/domains`, { body: { name }, key: k })).body;
      dns.publish(d.records);
      const v = await request(`${t.api}/domains/${d.id}/verify`, { method: 'POST', key: k });
      if (v.body.status !== 'verified') throw new Error(`could not verify ${name}: ${JSON.stringify(v.body.dns_issues)}`);
      return d;
    },
    routeTo(domain, ip = '127.0.0.2') {
      dns.set(domain, 'MX', [{ preference: 10, exchange: `mx.${domain}` }]);
      dns.set(`mx.${domain}`, 'A', [ip]);
    },
    send: (body, headers = {}) => request(`${t.api}/emails`, { body, key, headers }),
    async events(emailId) {
      return (await request(`${t.api}/emails/${emailId}/events`, { key })).body.data;
    },
    async dkim(raw) {
      const result = await dkimVerify(raw, { resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<string[][]> });
      const first = result.results[0];
      const header = /^DKIM-Signature:((?:.*\r\n[ \t].*)*.*)\r\n/im.exec(raw.toString('latin1'))?.[1] ?? '';
      const h = /\bh=([^;]+)/.exec(header.replace(/\r\n[ \t]/g, '').replace(/\s+/g, ''))?.[1] ?? '';
      return { status: first?.status.result ?? 'none', signingDomain: first?.signingDomain ?? '', signedHeaders: h.toLowerCase().split(':').filter(Boolean) };
    },
    async stop() {
      await t.stop();
      await sink.close();
      await dns.close();
    },
  };
  return scene;
}

/** Polls until `check` holds (or fails after `ms`): for outcomes that arrive asynchronously. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false> | T | undefined | null | false, ms = 10_000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as T;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A DNS server for tests whose box delivers to one destination: the box's name is 127.0.0.1, and dest.test's
 * MX is mx.dest.test at 127.0.0.2, where the test's sink listens.
 */
export async function startDestinationDns(): Promise<DnsServer> {
  const dns = await startDnsServer();
  dns.add(BOX, 'A', '127.0.0.1');
  dns.set('dest.test', 'MX', [{ preference: 10, exchange: 'mx.dest.test' }]);
  dns.set('mx.dest.test', 'A', ['127.0.0.2']);
  return dns;
}
