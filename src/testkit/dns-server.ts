// Test-only authoritative DNS server: answers, over UDP and TCP on one port, from records a test publishes.
// It must never recurse or forward, and must not hand-write wire format: dns-packet encodes and decodes.
// Failures it is told to script are the only failures it produces; a bad packet is dropped, never fatal.

import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import type { Answer, OptAnswer, Packet, SoaData } from 'dns-packet';

export type RecordType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'NS' | 'SOA' | 'CNAME' | 'PTR' | 'TLSA';

export interface MxInput {
  preference: number;
  exchange: string;
}

export interface SoaInput {
  mname: string;
  rname: string;
  serial?: number;
  refresh?: number;
  retry?: number;
  expire?: number;
  minimum?: number;
}

/** RFC 6698 2.1: certificate usage, selector, matching type and the association data. */
export interface TlsaInput {
  usage: number;
  selector: number;
  matchingType: number;
  certificate: Buffer;
}

/** What `add`/`set` take for each type. A TXT string[] is ONE record made of several character-strings. */
export interface RecordData {
  A: string;
  AAAA: string;
  MX: MxInput;
  TXT: string | string[];
  NS: string;
  SOA: SoaInput;
  CNAME: string;
  PTR: string;
  TLSA: TlsaInput;
}

export type FailMode = 'SERVFAIL' | 'REFUSED' | 'timeout';

export interface DnsQuery {
  /** Lower-cased, without a trailing dot. */
  name: string;
  type: string;
  transport: 'udp' | 'tcp';
  at: number;
}

export interface DnsServerOptions {
  host?: string;
  port?: number;
}

type Transport = DnsQuery['transport'];

// dns-packet decodes the response code for us but exports no constants to encode one; it rides in the low
// four bits of `flags`.
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 } as const;
type Rcode = (typeof RCODE)[keyof typeof RCODE];

// RFC 1035's limit for UDP without EDNS; a larger answer must make the client retry over TCP.
const PLAIN_UDP_LIMIT = 512;
const OUR_EDNS_PAYLOAD = 1232;
const MAX_CNAME_HOPS = 8;
const BIND_ATTEMPTS = 5;

const SOA_DEFAULTS = { serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 60 };

export async function startDnsServer(opts: DnsServerOptions = {}): Promise<DnsServer> {
  const host = opts.host ?? '127.0.0.1';
  const { udp, tcp } = await bindPair(host, opts.port ?? 0);
  return new DnsServer(host, udp, tcp);
}

export class DnsServer {
  readonly host: string;
  readonly port: number;
  /** `host:port` as `Resolver.setServers` and MAILWRIGHT_DNS_SERVERS expect it. */
  readonly address: string;
  readonly queries: DnsQuery[] = [];

  private readonly zone = new Map<string, Map<RecordType, Answer[]>>();
  private readonly failures = new Map<string, Map<string, FailMode>>();
  private readonly delays = new Map<string, number>();
  /** Apexes whose answers carry the AD bit, as a validating resolver's would (RFC 4035 3.2.3). */
  private readonly signed = new Set<string>();
  private readonly connections = new Set<net.Socket>();
  private readonly udp: dgram.Socket;
  private readonly tcp: net.Server;
  private closing: Promise<void> | undefined;

  constructor(host: string, udp: dgram.Socket, tcp: net.Server) {
    this.host = host;
    this.udp = udp;
    this.tcp = tcp;
    this.port = udp.address().port;
    this.address = net.isIPv6(host) ? `[${host}]:${this.port}` : `${host}:${this.port}`;
    udp.on('message', (msg, rinfo) => this.onDatagram(msg, rinfo));
    // A late socket error (e.g. ICMP unreachable from a departed client) must not take a test down.
    udp.on('error', () => {});
    tcp.on('connection', (socket) => this.onConnection(socket));
  }

  /** Adds one record to the name's RRset of this type; names are case-insensitive, a trailing dot is ignored. */
  add<T extends RecordType>(name: string, type: T, data: RecordData[T], ttl = 300): this {
    const key = normalize(name);
    const rrsets = this.zone.get(key) ?? new Map<RecordType, Answer[]>();
    const rrset = rrsets.get(type) ?? [];
    rrset.push(toAnswer(key, { type, data } as RecordInput, ttl));
    rrsets.set(type, rrset);
    this.zone.set(key, rrsets);
    return this;
  }

  /** An authoritative zone: its SOA (the first nameserver as mname) and NS records. */
  addZone(apex: string, nameservers: string[] = [`ns1.${normalize(apex)}`]): this {
    this.add(apex, 'SOA', { mname: nameservers[0] ?? `ns1.${normalize(apex)}`, rname: `hostmaster.${normalize(apex)}` });
    for (const ns of nameservers) this.add(apex, 'NS', ns);
    return this;
  }

  /** Publishes records as the box lists them ({type, name, value, priority}), replacing each RRset. */
  publish(records: Array<{ type: string; name: string; value: string; priority?: number }>): this {
    for (const r of records) {
      if (r.type === 'MX') this.set(r.name, 'MX', [{ preference: r.priority ?? 10, exchange: r.value }]);
      else if (r.type === 'TXT') this.set(r.name, 'TXT', [r.value]);
      else throw new TypeError(`publish() takes TXT and MX records, not ${r.type}`);
    }
    return this;
  }

  /** Replaces the RRset; an empty list removes it. */
  set<T extends RecordType>(name: string, type: T, data: RecordData[T][], ttl = 300): this {
    const key = normalize(name);
    // Build every record before touching the zone so invalid input leaves the old RRset in place.
    const rrset = data.map((d) => toAnswer(key, { type, data: d } as RecordInput, ttl));
    this.remove(name, type);
    if (rrset.length > 0) {
      const rrsets = this.zone.get(key) ?? new Map<RecordType, Answer[]>();
      rrsets.set(type, rrset);
      this.zone.set(key, rrsets);
    }
    return this;
  }

  remove(name: string, type?: RecordType): this {
    const key = normalize(name);
    const rrsets = this.zone.get(key);
    if (rrsets && type) rrsets.delete(type);
    if (rrsets && (!type || rrsets.size === 0)) this.zone.delete(key);
    return this;
  }

  /** Deletes every record. Fail rules and the query log stay: see unfail() and resetQueries(). */
  clear(): this {
    this.zone.clear();
    return this;
  }

  /** Scripts a failure for queries of this name and type ('*' = any type); 'timeout' means never answer. */
  fail(name: string, type: RecordType | '*', mode: FailMode): this {
    const key = normalize(name);
    const rules = this.failures.get(key) ?? new Map<string, FailMode>();
    rules.set(type, mode);
    this.failures.set(key, rules);
    return this;
  }

  /** Answers queries of this name over UDP only after `ms` (0: at once again), as a slow authoritative server would. */
  slow(name: string, ms: number): this {
    if (ms > 0) this.delays.set(normalize(name), ms);
    else this.delays.delete(normalize(name));
    return this;
  }

  /**
   * Plays a validating resolver for this zone: answers for the apex and names under it carry the AD bit
   * (`false` takes it away again). The kit signs nothing; the bit is what DNSSEC-aware clients read.
   */
  authenticate(apex: string, on = true): this {
    if (on) this.signed.add(normalize(apex));
    else this.signed.delete(normalize(apex));
    return this;
  }

  unfail(name?: string): this {
    if (name === undefined) this.failures.clear();
    else this.failures.delete(normalize(name));
    return this;
  }

  resetQueries(): this {
    // In place, so a test holding the array sees it emptied.
    this.queries.length = 0;
    return this;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const socket of this.connections) socket.destroy();
      await Promise.all([
        new Promise<void>((resolve) => this.udp.close(() => resolve())),
        new Promise<void>((resolve) => this.tcp.close(() => resolve())),
      ]);
    })();
    return this.closing;
  }

  private onDatagram(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let query: Packet;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const reply = this.respond(query, 'udp');
    if (!reply) return;
    const opt = findOpt(query);
    const limit = opt ? Math.max(PLAIN_UDP_LIMIT, opt.udpPayloadSize) : PLAIN_UDP_LIMIT;
    let wire = encodeSafely(reply, dnsPacket.encode);
    if (wire && wire.length > limit) {
      // Truncated means "ask again over TCP": drop the records, keep question and OPT.
      const truncated = { ...reply, flags: (reply.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE, answers: [], authorities: [] };
      wire = encodeSafely(truncated, dnsPacket.encode);
    }
    if (!wire) return;
    // A send failure means the client is gone; it has nothing to hear.
    const send = () => {
      try {
        this.udp.send(wire, rinfo.port, rinfo.address, () => {});
      } catch {} // closed meanwhile
    };
    const delay = this.delays.get(normalize(query.questions?.[0]?.name ?? ''));
    if (delay) setTimeout(send, delay).unref();
    else send();
  }

  private onConnection(socket: net.Socket): void {
    this.connections.add(socket);
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      // Clients may pipeline; streamDecode reads only the first message, so the length prefix is read
      // here just to find where each one ends.
      while (pending.length >= 2) {
        const frameLength = 2 + pending.readUInt16BE(0);
        if (pending.length < frameLength) break;
        const frame = pending.subarray(0, frameLength);
        pending = pending.subarray(frameLength);
        let query: Packet | null;
        try {
          query = dnsPacket.streamDecode(frame);
        } catch {
          continue;
        }
        const reply = query && this.respond(query, 'tcp');
        const wire = reply && encodeSafely(reply, dnsPacket.streamEncode);
        if (wire && socket.writable) socket.write(wire);
      }
    });
  }

  /** Null means stay silent: a malformed query, or a scripted timeout. */
  private respond(query: Packet, transport: Transport): Packet | null {
    const question = query.questions?.[0];
    if (query.type !== 'query' || query.questions?.length !== 1 || !question) return null;
    const key = normalize(question.name);
    this.queries.push({ name: key, type: question.type, transport, at: Date.now() });

    const opt = findOpt(query);
    const base = {
      type: 'response' as const,
      id: query.id ?? 0,
      questions: query.questions,
      additionals: opt ? [ourOpt()] : [],
    };
    const rd = (query.flags ?? 0) & dnsPacket.RECURSION_DESIRED;

    const failure = this.failures.get(key);
    const mode = failure?.get(question.type) ?? failure?.get('*');
    if (mode === 'timeout') return null;
    if (mode) return { ...base, flags: rd | RCODE[mode] };

    const { rcode, answers, authorities } = this.lookup(question.name, question.type);
    const ad = this.isSigned(key) ? dnsPacket.AUTHENTIC_DATA : 0;
    return { ...base, flags: dnsPacket.AUTHORITATIVE_ANSWER | rd | ad | rcode, answers, authorities };
  }

  private isSigned(key: string): boolean {
    for (let name: string | null = key; name !== null; name = parentOf(name)) if (this.signed.has(name)) return true;
    return false;
  }

  private lookup(qname: string, qtype: string): { rcode: Rcode; answers: Answer[]; authorities: Answer[] } {
    const key = normalize(qname);
    if (qtype === 'ANY') {
      const all = [...(this.zone.get(key)?.values() ?? [])].flat().map((a) => ({ ...a, name: qname }));
      if (all.length > 0) return { rcode: RCODE.NOERROR, answers: all, authorities: [] };
      return this.negative(key);
    }

    const answers: Answer[] = [];
    const seen = new Set<string>();
    let owner = qname;
    let current = key;
    for (let hop = 0; ; hop++) {
      const rrsets = this.zone.get(current);
      const exact = rrsets?.get(qtype as RecordType);
      if (exact) {
        answers.push(...exact.map((a) => ({ ...a, name: owner })));
        return { rcode: RCODE.NOERROR, answers, authorities: [] };
      }
      const cname = qtype === 'CNAME' ? undefined : rrsets?.get('CNAME')?.[0];
      if (cname?.type !== 'CNAME' || hop >= MAX_CNAME_HOPS || seen.has(current)) break;
      seen.add(current);
      answers.push({ ...cname, name: owner });
      owner = cname.data;
      current = normalize(owner);
    }
    // A chain whose end holds nothing of this type: the CNAMEs are still the answer. A dangling target
    // is NOERROR rather than NXDOMAIN because the kit cannot tell whether it is "ours".
    if (answers.length > 0) return { rcode: RCODE.NOERROR, answers, authorities: this.soaFor(current) };
    return this.negative(key);
  }

  private negative(key: string): { rcode: Rcode; answers: Answer[]; authorities: Answer[] } {
    const rcode = this.exists(key) ? RCODE.NOERROR : RCODE.NXDOMAIN;
    return { rcode, answers: [], authorities: this.soaFor(key) };
  }

  /** A name exists if it holds records or is an ancestor of one that does (an empty non-terminal). */
  private exists(key: string): boolean {
    if (this.zone.has(key)) return true;
    if (key === '') return this.zone.size > 0;
    for (const held of this.zone.keys()) {
      if (held.endsWith(`.${key}`)) return true;
    }
    return false;
  }

  /** The closest enclosing SOA, for negative answers, so resolvers can cache them (RFC 2308). */
  private soaFor(key: string): Answer[] {
    for (let name: string | null = key; name !== null; name = parentOf(name)) {
      const soa = this.zone.get(name)?.get('SOA')?.[0];
      if (soa && soa.type === 'SOA') {
        const ttl = Math.min(soa.ttl ?? 0, soa.data.minimum ?? SOA_DEFAULTS.minimum);
        return [{ ...soa, ttl }];
      }
    }
    return [];
  }
}

type RecordInput = { [T in RecordType]: { type: T; data: RecordData[T] } }[RecordType];

function toAnswer(name: string, input: RecordInput, ttl: number): Answer {
  if (!Number.isInteger(ttl) || ttl < 0 || ttl > 0x7fffffff) throw new RangeError(`bad TTL ${ttl}`);
  const base = { name, ttl, class: 'IN' as const };
  switch (input.type) {
    case 'A':
      if (!net.isIPv4(input.data)) throw new TypeError(`A record for ${name} needs an IPv4 address, got ${input.data}`);
      return { ...base, type: 'A', data: input.data };
    case 'AAAA':
      if (!net.isIPv6(input.data)) throw new TypeError(`AAAA record for ${name} needs an IPv6 address, got ${input.data}`);
      return { ...base, type: 'AAAA', data: input.data };
    case 'MX': {
      const { preference, exchange } = input.data;
      if (!Number.isInteger(preference) || preference < 0 || preference > 0xffff) {
        throw new RangeError(`MX preference for ${name} must be 0..65535, got ${preference}`);
      }
      return { ...base, type: 'MX', data: { preference, exchange: stripDot(hostName(exchange, name)) } };
    }
    case 'TXT':
      return { ...base, type: 'TXT', data: characterStrings(input.data) };
    case 'TLSA': {
      const { usage, selector, matchingType, certificate } = input.data;
      if (![usage, selector, matchingType].every((n) => Number.isInteger(n) && n >= 0 && n <= 255) || !Buffer.isBuffer(certificate)) {
        throw new TypeError(`TLSA record for ${name} needs usage, selector and matching type 0..255 and a Buffer`);
      }
      return { ...base, type: 'TLSA', data: { usage, selector, matchingType, certificate } };
    }
    case 'NS':
    case 'CNAME':
    case 'PTR':
      return { ...base, type: input.type, data: stripDot(hostName(input.data, name)) };
    case 'SOA': {
      const data: SoaData = {
        ...SOA_DEFAULTS,
        ...definedOnly(input.data),
        mname: stripDot(hostName(input.data.mname, name)),
        rname: stripDot(hostName(input.data.rname, name)),
      };
      return { ...base, type: 'SOA', data };
    }
  }
}

/** Splits TXT data into character-strings of at most 255 bytes, the limit of one length octet. */
function characterStrings(data: string | string[]): Buffer[] {
  const parts = typeof data === 'string' ? [data] : data;
  const out: Buffer[] = [];
  for (const part of parts) {
    const bytes = Buffer.from(part, 'utf8');
    if (bytes.length === 0) out.push(bytes);
    for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255));
  }
  // An RR with no character-string at all is not valid TXT RDATA.
  if (out.length === 0) out.push(Buffer.alloc(0));
  return out;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function hostName(value: unknown, owner: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new TypeError(`record for ${owner} needs a host name`);
  return value;
}

function normalize(name: string): string {
  return stripDot(name.trim().toLowerCase());
}

function stripDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Parent of a name; the root ('') has none. */
function parentOf(name: string): string | null {
  if (name === '') return null;
  const dot = name.indexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1);
}

function findOpt(packet: Packet): OptAnswer | undefined {
  return packet.additionals?.find((a): a is OptAnswer => a.type === 'OPT');
}

function ourOpt(): OptAnswer {
  // No options echoed: a COOKIE copied back without a server cookie would make c-ares discard the reply.
  return { type: 'OPT', name: '.', udpPayloadSize: OUR_EDNS_PAYLOAD, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
}

/** Encodes, falling back to a bare SERVFAIL if the records cannot be encoded, and to silence after that. */
function encodeSafely(packet: Packet, encode: (p: Packet) => Buffer): Buffer | null {
  try {
    return encode(packet);
  } catch {
    try {
      const flags = ((packet.flags ?? 0) & ~0xf & ~dnsPacket.AUTHORITATIVE_ANSWER) | RCODE.SERVFAIL;
      return encode({ ...packet, flags, answers: [], authorities: [] });
    } catch {
      return null;
    }
  }
}

async function bindPair(host: string, port: number): Promise<{ udp: dgram.Socket; tcp: net.Server }> {
  // Only a port we picked ourselves may be swapped for another when TCP finds it taken.
  const attempts = port === 0 ? BIND_ATTEMPTS : 1;
  for (let attempt = 1; ; attempt++) {
    const udp = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const tcp = net.createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(udp.address().port, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
      return { udp, tcp };
    } catch (err) {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= attempts) throw err;
    }
  }
}
