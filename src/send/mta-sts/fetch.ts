// Fetching a domain's MTA-STS policy (RFC 8461 3.3): GET https://mta-sts.<domain>/.well-known/mta-sts.txt with
// a certificate valid for that name, no redirects, a 64 KiB cap and a timeout, through dns/safe-fetch.ts. It
// says what went wrong in TLS-RPT's words (RFC 8460 4.3.2.2); it must not cache (policies.ts does).
import type { Resolver } from 'node:dns/promises';
import { FetchFailed, FetchRefused, safeRequest } from '../../dns/safe-fetch.ts';
import { policyUrl } from '../../dns/mta-sts-policy.ts';
import { parsePolicy, PolicyInvalid, type StsPolicy } from './policy.ts';

export interface PolicyFetchOptions {
  resolver: Resolver;
  /** Lab/test mode (allow_private_delivery): the policy host may be on loopback and `port` other than 443. */
  allowPrivate: boolean;
  /** mta_sts_port, a test knob: 443 on every real box. */
  port: number;
  /** The CAs a policy host's certificate may chain to: the system's, plus tls_ca_file. */
  ca: string[];
  timeoutMs?: number;
}

export type FetchedPolicy =
  | { ok: true; policy: StsPolicy; text: string }
  | { ok: false; type: 'sts-policy-fetch-error' | 'sts-policy-invalid' | 'sts-webpki-invalid'; reason: string };

const MAX_POLICY_BYTES = 64 * 1024; // RFC 8461 3.3 suggests 64 KiB
const DEFAULT_TIMEOUT_MS = 20_000; // RFC 8461 3.3: "a reasonable timeout"; the brief says 10 to 30 s


export async function fetchPolicy(domain: string, opts: PolicyFetchOptions): Promise<FetchedPolicy> {
  const url = policyUrl(domain, opts.port);
  let text: string;
  try {
    const res = await safeRequest(url, { method: 'GET', headers: { 'user-agent': 'Mailwright', accept: 'text/plain', 'accept-encoding': 'identity' } }, {
      resolver: opts.resolver,
      allowPrivate: opts.allowPrivate,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBytes: MAX_POLICY_BYTES,
      ca: opts.ca,
    });
    // RFC 8461 3.3: "only ... HTTP 200 response"; anything else is no policy.
    if (res.status !== 200) return { ok: false, type: 'sts-policy-fetch-error', reason: `${url} answered ${res.status}` };
    // RFC 8461 3.2: the policy is served as text/plain; a longer one than the cap is not read as a policy at all.
    if (!/^text\/plain\s*(;|$)/i.test(res.contentType ?? '')) return { ok: false, type: 'sts-policy-invalid', reason: `${url} is served as ${res.contentType ?? 'no media type'}, not text/plain` };
    if (res.truncated) return { ok: false, type: 'sts-policy-invalid', reason: `${url} is longer than ${MAX_POLICY_BYTES} bytes` };
    text = res.body.toString('utf8');
  } catch (err) {
    if (err instanceof FetchFailed && isCertificateError(err.code)) return { ok: false, type: 'sts-webpki-invalid', reason: err.message };
    if (err instanceof FetchFailed || err instanceof FetchRefused) return { ok: false, type: 'sts-policy-fetch-error', reason: err.message };
    throw err;
  }
  try {
    return { ok: true, policy: parsePolicy(text), text };
  } catch (err) {
    if (err instanceof PolicyInvalid) return { ok: false, type: 'sts-policy-invalid', reason: `${url}: ${err.message}` };
    throw err;
  }
}

/** Node's TLS verification codes (CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID, UNABLE_TO_VERIFY_LEAF_SIGNATURE ...). */
function isCertificateError(code: string): boolean {
  return /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME/.test(code);
}
