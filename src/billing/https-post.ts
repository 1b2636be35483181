// Billing's form POST to a provider's REST API (Stripe), as a thin wrapper over dns/safe-fetch.ts safeRequest,
// which owns every SSRF rule (catalogue API-10); it must not open a connection of its own. The provider's key
// travels in the caller's headers to the configured host only, and the answer is read as JSON.
import { checkUrl, jsonAnswer, safeRequest, type FetchPolicy } from '../dns/safe-fetch.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 256 * 1024;

export async function postForm(url: string, form: URLSearchParams, headers: Record<string, string>, policy: FetchPolicy): Promise<{ status: number; body: unknown }> {
  // A provider API is https even in lab mode: the secret key is never to cross the wire in clear.
  checkUrl(url, { allowPrivate: policy.allowPrivate });
  const res = await safeRequest(
    url,
    {
      method: 'POST',
      headers: { ...headers, accept: 'application/json', 'accept-encoding': 'identity', 'user-agent': 'Mailwright', 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from(form.toString()),
    },
    { ...policy, timeoutMs: policy.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxBytes: policy.maxBytes ?? DEFAULT_MAX_BYTES, truncate: false },
  );
  return jsonAnswer(url, res);
}
