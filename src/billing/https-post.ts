// An HTTPS POST of a form to a billing provider's REST API under the rules of dns/safe-fetch.ts (catalogue
// API-10), which only GETs: https only, no userinfo, every resolved address vetted and then pinned for the
// connection, port 443 outside lab mode, no redirect followed, a time and a body cap. It sends exactly the
// headers it is given (the provider's key goes to the configured host and nowhere else) and reads JSON back.
import https from 'node:https';
import net from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { blockedReason, checkUrl, FetchFailed, FetchRefused, type FetchPolicy } from '../dns/safe-fetch.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 256 * 1024;

export async function postForm(url: string, form: URLSearchParams, headers: Record<string, string>, policy: FetchPolicy): Promise<{ status: number; body: unknown }> {
  const timeoutMs = policy.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const target = checkUrl(url, { allowPrivate: policy.allowPrivate });
  const addresses = target.ip ? [target.ip] : await resolveAll(target.host, policy, target.shown, deadline);
  if (!policy.allowPrivate) {
    for (const address of addresses) {
      const why = blockedReason(address);
      if (why) throw new FetchRefused('address', url, `refused ${target.shown}: ${target.host} resolves to ${address} (${why})`);
    }
    if (target.port !== 443) throw new FetchRefused('port', url, `refused ${target.shown}: port ${target.port} (only 443 outside lab mode)`);
  }
  const payload = Buffer.from(form.toString());
  const maxBytes = policy.maxBytes ?? DEFAULT_MAX_BYTES;
  const { shown } = target;
  // IPv4 first, as safe-fetch does; every entry was vetted.
  const pinned = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 })).sort((a, b) => a.family - b.family);
  const lookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  }) as unknown as LookupFunction;

  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, value?: { status: number; body: unknown }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(value!);
    };
    const req = https.request({
      method: 'POST',
      host: target.host,
      servername: target.ip ? undefined : target.host,
      port: target.port,
      path: target.url.pathname + target.url.search,
      headers: {
        ...headers,
        accept: 'application/json',
        'accept-encoding': 'identity',
        'user-agent': 'Mailwright',
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String(payload.length),
      },
      lookup: target.ip ? undefined : lookup,
      ca: policy.ca,
      agent: false,
    });
    const timer = setTimeout(() => finish(new FetchFailed(shown, 'ETIMEDOUT', `${shown}: no complete answer within ${timeoutMs} ms`)), Math.max(0, deadline - Date.now()));
    req.on('error', (err: NodeJS.ErrnoException) => finish(new FetchFailed(shown, err.code ?? 'EFETCH', `${shown}: ${err.message}`, err)));
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) return finish(new FetchRefused('redirect', url, `refused ${shown}: answered ${status}; redirects are not followed`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return finish(new FetchRefused('size', url, `refused ${shown}: body exceeds ${maxBytes} bytes`));
        chunks.push(chunk);
      });
      res.on('error', (err: NodeJS.ErrnoException) => finish(new FetchFailed(shown, err.code ?? 'EFETCH', `${shown}: ${err.message}`, err)));
      res.on('close', () => {
        if (!res.complete) finish(new FetchFailed(shown, 'ECONNRESET', `${shown}: connection closed before the body was complete`));
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8').trim();
        let body: unknown = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch (err) {
          if (status >= 200 && status < 300) return finish(new FetchFailed(shown, 'EBADJSON', `${shown}: answered ${status} with a body that is not JSON`, err));
        }
        finish(null, { status, body });
      });
    });
    req.end(payload);
  });
}

async function resolveAll(host: string, policy: FetchPolicy, shown: string, deadline: number): Promise<string[]> {
  const settle = (p: Promise<string[]>) =>
    p.catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [];
      throw new FetchFailed(shown, err.code ?? 'EDNS', `${shown}: looking up ${host} failed (${err.code ?? err.message})`, err);
    });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FetchFailed(shown, 'ETIMEDOUT', `${shown}: looking up ${host} took too long`)), Math.max(0, deadline - Date.now()));
  });
  const lookups = Promise.all([settle(policy.resolver.resolve4(host)), settle(policy.resolver.resolve6(host))]);
  lookups.catch(() => {});
  try {
    const [v4, v6] = await Promise.race([lookups, expired]);
    const all = [...v4, ...v6];
    if (all.length === 0) throw new FetchFailed(shown, 'ENOTFOUND', `${shown}: ${host} has no A or AAAA records`);
    return all;
  } finally {
    clearTimeout(timer);
  }
}
