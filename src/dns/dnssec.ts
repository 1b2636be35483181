// Raw DNS queries for what node's Resolver cannot show: TLSA records (RFC 6698) and the AD bit a validating
// resolver sets (RFC 4035 3.2.3, RFC 6840 5.7). Asked of the configured servers (dns_servers) in order, over UDP
// with EDNS and DO, again over TCP when truncated. It does not validate DNSSEC itself: it trusts the AD bit of
// the resolver the operator configured, as Postfix and mox do (RFC 7672 1.3 asks for a trusted validating resolver).
import dgram from 'node:dgram';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import dnsPacket from 'dns-packet';
import type { Answer, DecodedPacket, Packet } from 'dns-packet';

export interface RawAnswer {
  /** NOERROR, NXDOMAIN, SERVFAIL ... as dns-packet names them. */
  rcode: string;
  /** The resolver says it validated the answer (AD). */
  authenticated: boolean;
  answers: Answer[];
}

const DEFAULT_TIMEOUT_MS = 3000;

/** `1.2.3.4`, `1.2.3.4:53`, `[::1]:53` or `::1`, as config/values.ts dnsServers accepts them. */
export function parseServer(server: string): { host: string; port: number } {
  if (net.isIP(server)) return { host: server, port: 53 };
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(server) ?? /^([^:]+)(?::(\d+))?$/.exec(server);
  return { host: m?.[1] ?? server, port: m?.[2] ? Number(m[2]) : 53 };
}

/** One question to the first server that answers; throws (with the last error) when none does. */
export async function rawQuery(servers: string[], name: string, type: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<RawAnswer> {
  let last: unknown = new Error('no DNS server configured');
  for (const server of servers) {
    const to = parseServer(server);
    try {
      let reply = await overUdp(to, question(name, type), timeoutMs);
      if (reply.flag_tc) reply = await overTcp(to, question(name, type), timeoutMs);
      const rcode = (reply as DecodedPacket & { rcode?: string }).rcode ?? 'NOERROR';
      // SERVFAIL is what a validating resolver answers for bogus data (RFC 4035 5.5): not an answer to use.
      if (rcode === 'SERVFAIL' || rcode === 'REFUSED') {
        last = Object.assign(new Error(`${type} lookup for ${name} failed (${rcode})`), { code: rcode });
        continue;
      }
      const wanted = type.toUpperCase();
      return { rcode, authenticated: reply.flag_ad, answers: (reply.answers ?? []).filter((a) => a.type === wanted || a.type === 'CNAME') };
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/**
 * Whether the first configured resolver validates DNSSEC: the root's NS set asked with DO, which a validating
 * resolver always answers with AD (the root is signed). False also when no server answers.
 */
export async function resolverValidates(servers: string[], timeoutMs = DEFAULT_TIMEOUT_MS): Promise<{ validates: boolean; detail: string }> {
  try {
    const answer = await rawQuery(servers.slice(0, 1), '.', 'NS', timeoutMs);
    return { validates: answer.authenticated, detail: answer.authenticated ? 'answers carry the AD bit' : 'answers come without the AD bit' };
  } catch (err) {
    return { validates: false, detail: `the resolver did not answer (${(err as Error).message})` };
  }
}

function question(name: string, type: string): Packet {
  return {
    type: 'query',
    id: randomInt(0, 0x10000),
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.AUTHENTIC_DATA,
    questions: [{ type: type as 'TLSA', name, class: 'IN' }],
    // DO: ask for DNSSEC; the AD bit in the query too, which RFC 6840 5.7 says is enough on its own.
    additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: dnsPacket.DNSSEC_OK, flag_do: true, options: [] }],
  };
}

function overUdp(to: { host: string; port: number }, query: Packet, timeoutMs: number): Promise<DecodedPacket> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(to.host) ? 'udp6' : 'udp4');
    const timer = setTimeout(() => done(Object.assign(new Error(`no answer from ${to.host}:${to.port}`), { code: 'ETIMEOUT' })), timeoutMs);
    const done = (err: Error | null, reply?: DecodedPacket) => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(reply!);
    };
    socket.on('error', (err) => done(err));
    socket.on('message', (msg) => {
      try {
        const reply = dnsPacket.decode(msg) as DecodedPacket;
        // An answer to another question (a late or spoofed one) is not ours: keep waiting.
        if (reply.id === query.id) done(null, reply);
      } catch {} // a malformed datagram: keep waiting
    });
    socket.send(dnsPacket.encode(query), to.port, to.host);
  });
}

function overTcp(to: { host: string; port: number }, query: Packet, timeoutMs: number): Promise<DecodedPacket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: to.host, port: to.port });
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => done(Object.assign(new Error(`no answer from ${to.host}:${to.port} over TCP`), { code: 'ETIMEOUT' })), timeoutMs);
    const done = (err: Error | null, reply?: DecodedPacket) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    socket.on('error', (err) => done(err));
    socket.on('connect', () => socket.write(dnsPacket.streamEncode(query)));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return;
      try {
        done(null, dnsPacket.streamDecode(buffered) as DecodedPacket);
      } catch (err) {
        done(err as Error);
      }
    });
  });
}
