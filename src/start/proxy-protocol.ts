// The PROXY protocol (HAProxy's, version 1 text and version 2 binary) on a listener behind a TCP load balancer,
// so SPF, blocklists, rate limits and logs see the client, not the balancer. Only a peer in trusted_proxies is
// read for a header, and from such a peer one is required: a connection without a valid header in time is
// closed. Anyone else is served as a direct client, by its own address, so a stranger cannot claim another.
// proxy-protocol-js parses the header; framing it on the stream (where it ends, what follows) and checking the
// addresses it carries are done here.
import { isIP, SocketAddress, type Server, type Socket } from 'node:net';
import proxyProtocol from 'proxy-protocol-js';
import { plainAddress, type RangeTest } from '../dns/ip-ranges.ts';
import type { Log } from '../log.ts';

const { V1ProxyProtocol, V2ProxyProtocol, Command, IPv4ProxyAddress, IPv6ProxyAddress } = proxyProtocol;

/** How long a trusted proxy has to send the whole header after connecting. */
export const HEADER_TIMEOUT_MS = 5_000;
const V1_MAX_BYTES = 107; // the specification's longest v1 line, CRLF included
const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
// Addresses take at most 216 bytes; TLVs (a balancer's TLS details, a cloud's endpoint id) the rest.
const V2_MAX_BYTES = 16 + 4096;

/** The client a header names, or null when it names none (v2 LOCAL, v1 UNKNOWN: the balancer's own check). */
type Client = { address: string; port: number } | null;

class ProxyHeaderError extends Error {}

/**
 * Reads PROXY headers on `server`'s connections from trusted proxies before its own connection handler (the
 * HTTP parser, smtp-server) sees them, and gives the socket the client's address and port.
 */
export function acceptProxyProtocol(server: Server, trusted: RangeTest, log: Log, what: string): void {
  const handlers = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const hand = (socket: Socket) => {
    for (const h of handlers) h.call(server, socket);
  };
  server.on('connection', (socket: Socket) => {
    const peer = plainAddress(socket.remoteAddress ?? '');
    if (!trusted(peer)) return hand(socket);
    readHeader(socket).then(
      (client) => {
        if (client) {
          Object.defineProperty(socket, 'remoteAddress', { value: client.address, configurable: true });
          Object.defineProperty(socket, 'remotePort', { value: client.port, configurable: true });
          Object.defineProperty(socket, 'remoteFamily', { value: isIP(client.address) === 6 ? 'IPv6' : 'IPv4', configurable: true });
        }
        hand(socket);
      },
      (err: Error) => {
        log.info(`${what}: closed a connection from the trusted proxy ${peer} without a valid PROXY header`, { reason: err.message });
        socket.destroy();
      },
    );
  });
}

/** The header at the start of the socket's bytes; what follows it is put back for the protocol to read. */
function readHeader(socket: Socket): Promise<Client> {
  return new Promise((resolve, reject) => {
    let seen = Buffer.alloc(0);
    const finish = (err: Error | null, client?: Client, rest?: Buffer) => {
      clearTimeout(timer);
      socket.off('readable', onReadable).off('end', onEnd).off('error', onError).off('close', onEnd);
      if (err) return reject(err);
      if (rest?.length) socket.unshift(rest);
      resolve(client ?? null);
    };
    const onEnd = () => finish(new ProxyHeaderError('the connection ended before a whole header'));
    const onError = (err: Error) => finish(err);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) {
        seen = Buffer.concat([seen, chunk]);
        let framed: { length: number } | null;
        try {
          framed = frame(seen);
        } catch (err) {
          return finish(err as Error);
        }
        if (!framed) continue;
        try {
          return finish(null, parse(seen.subarray(0, framed.length)), seen.subarray(framed.length));
        } catch (err) {
          return finish(err instanceof Error ? err : new ProxyHeaderError(String((err as { message?: string }).message ?? err)));
        }
      }
    };
    const timer = setTimeout(() => finish(new ProxyHeaderError(`no whole header within ${HEADER_TIMEOUT_MS / 1000} s`)), HEADER_TIMEOUT_MS);
    socket.on('readable', onReadable).on('end', onEnd).on('error', onError).on('close', onEnd);
  });
}

/** How long the header is once enough bytes are there (null: not yet); throws on what is no header. */
function frame(seen: Buffer): { length: number } | null {
  if (seen[0] === 0x0d) {
    const n = Math.min(seen.length, V2_SIGNATURE.length);
    if (!seen.subarray(0, n).equals(V2_SIGNATURE.subarray(0, n))) throw new ProxyHeaderError('the connection does not start with a PROXY header');
    if (seen.length < 16) return null;
    const length = 16 + seen.readUInt16BE(14);
    if (length > V2_MAX_BYTES) throw new ProxyHeaderError(`a v2 header of ${length} bytes`);
    return seen.length >= length ? { length } : null;
  }
  if (!'PROXY '.startsWith(seen.subarray(0, 6).toString('latin1'))) throw new ProxyHeaderError('the connection does not start with a PROXY header');
  const end = seen.indexOf('\r\n');
  if ((end < 0 ? seen.length : end + 2) > V1_MAX_BYTES) throw new ProxyHeaderError('a v1 header line longer than 107 bytes');
  return end < 0 ? null : { length: end + 2 };
}

function parse(header: Buffer): Client {
  if (header[0] === 0x0d) {
    const h = V2ProxyProtocol.parse(new Uint8Array(header));
    if (h.command === Command.LOCAL) return null;
    const a = h.proxyAddress;
    if (a instanceof IPv4ProxyAddress) return checked(a.sourceAddress.address.join('.'), a.sourcePort);
    if (a instanceof IPv6ProxyAddress) {
      const b = a.sourceAddress.address;
      const groups = Array.from({ length: 8 }, (_, i) => ((b[2 * i] << 8) | b[2 * i + 1]).toString(16));
      return checked(new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address, a.sourcePort);
    }
    // AF_UNSPEC or a UNIX socket: nothing to say about the client; the balancer stands in.
    return null;
  }
  const line = header.toString('latin1');
  if (/^PROXY UNKNOWN[ \r]/.test(line)) return null;
  const h = V1ProxyProtocol.parse(line);
  return checked(h.source.ipAddress, h.source.port);
}

/** The parser takes any dotted text for an address: only an address of the header's family is one. */
function checked(address: string, port: number): Client {
  if (!isIP(address) || !Number.isInteger(port) || port < 0 || port > 65535) throw new ProxyHeaderError(`an unusable source ${address} port ${port}`);
  return { address: plainAddress(address), port };
}
