// rspamd for those who run it: asks a local rspamd for its verdict on a received message over its
// HTTP protocol (POST /checkv2 to the normal worker, the SMTP envelope in its headers: rspamd.com, "Rspamd
// protocol") and turns it into a Signal of kind 'rspamd'; tells its controller the owner's corrections
// (POST /learnspam, /learnham, with the Password header when one is set). Every call is bounded by a timeout,
// and rspamd not answering is a problem to log, never a refusal: mail is filed without its verdict.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Signal } from './signals.ts';

export interface RspamdVerdict {
  /** rspamd's action: "reject", "rewrite subject", "add header", "greylist", "soft reject" or "no action". */
  action: string;
  score: number;
  /** The score from which rspamd rejects. */
  requiredScore: number;
  /** The rules that matched, strongest first. */
  symbols: Array<{ name: string; score: number; description?: string }>;
  /** rspamd decided before running its rules (GTUBE, a pre-filter). */
  skipped: boolean;
}

/** What rspamd is told of the SMTP transaction, as a receiving MTA tells it. */
export interface RspamdEnvelope {
  ip: string;
  helo: string;
  /** The client's reverse DNS name, when it has one. */
  ptr: string | null;
  mailFrom: string;
  rcpt: readonly string[];
  /** The box's own name (rspamd's MTA-Name). */
  hostname: string;
}

export type Answer<T> = { ok: true; value: T } | { ok: false; problem: string };

/** How much of rspamd's answer is read: a verdict is a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** Actions by which rspamd says "spam" (the rest say "not spam", or are about greylisting and rate limits). */
const SPAM_ACTIONS = new Set(['add header', 'rewrite subject']);

/** rspamd's verdict on `raw`, or why there is none (refused, unreachable, past `timeoutMs`, not understood). */
export async function checkWithRspamd(opts: { url: string; timeoutMs: number }, raw: Buffer, envelope: RspamdEnvelope): Promise<Answer<RspamdVerdict>> {
  const headers: Record<string, string | string[]> = {
    Ip: envelope.ip,
    Helo: printable(envelope.helo),
    'MTA-Name': envelope.hostname,
    // All rules, even past a reject, so the owner sees every reason (the protocol's Pass: all).
    Pass: 'all',
  };
  if (envelope.ptr) headers.Hostname = envelope.ptr;
  if (envelope.mailFrom) headers.From = printable(envelope.mailFrom);
  // One Rcpt header per recipient: rspamd reads each as one address, so they are never joined with commas.
  if (envelope.rcpt.length) headers.Rcpt = envelope.rcpt.map(printable);
  const answer = await post(`${opts.url.replace(/\/+$/, '')}/checkv2`, headers, raw, opts.timeoutMs);
  if (!answer.ok) return answer;
  const { status, message, body } = answer.value;
  if (status !== 200) return { ok: false, problem: `rspamd answered ${status} ${message}`.trim() };
  try {
    return { ok: true, value: verdictOf(JSON.parse(body)) };
  } catch (err) {
    return { ok: false, problem: `rspamd's answer is not a verdict: ${(err as Error).message}` };
  }
}

/** rspamd's JSON answer, read. */
export function verdictOf(json: unknown): RspamdVerdict {
  const v = json as { action?: unknown; score?: unknown; required_score?: unknown; symbols?: Record<string, { name?: string; score?: number; description?: string }>; is_skipped?: unknown };
  if (typeof v?.action !== 'string' || typeof v.score !== 'number') throw new Error('no action or score');
  const symbols = Object.entries(v.symbols ?? {})
    .map(([name, s]) => ({ name: s?.name ?? name, score: typeof s?.score === 'number' ? s.score : 0, ...(s?.description ? { description: String(s.description) } : {}) }))
    .sort((a, b) => b.score - a.score);
  return { action: v.action, score: v.score, requiredScore: typeof v.required_score === 'number' ? v.required_score : 15, symbols, skipped: v.is_skipped === true };
}

/**
 * The verdict as a spam probability: reject 0.99; "add header" and "rewrite subject" (rspamd's spam) 0.9;
 * anything else (no action, and greylisting, which the box does not do) leans to ham, from 0.05 for a
 * negative score to 0.45 just under rspamd's reject score.
 */
export function rspamdWeight(v: RspamdVerdict): number {
  if (v.action === 'reject') return 0.99;
  if (SPAM_ACTIONS.has(v.action)) return 0.9;
  if (v.score <= 0) return 0.05;
  return Math.round(Math.min(0.45, 0.1 + (0.35 * v.score) / Math.max(v.requiredScore, 1)) * 1000) / 1000;
}

export function rspamdSignal(v: RspamdVerdict): Signal {
  // The rules that counted towards the score; when rspamd decided before its rules (GTUBE), the one that decided.
  const named = v.symbols.filter((s) => s.score > 0 || v.skipped).slice(0, 5).map((s) => s.name);
  const score = `score ${round(v.score)} of ${round(v.requiredScore)}`;
  return { kind: 'rspamd', detail: `rspamd: ${v.action} (${score})${named.length ? `: ${named.join(', ')}` : ''}`, weight: rspamdWeight(v) };
}

/**
 * Teaches rspamd's controller that `raw` is spam or ham. 200 is learned; 204 (too few words to learn from)
 * and 208 (learned already) are answers too, said in `value`; anything else is a problem.
 */
export async function learnInRspamd(opts: { controllerUrl: string; password: string | null; timeoutMs: number }, raw: Buffer, as: 'spam' | 'ham'): Promise<Answer<string>> {
  const headers: Record<string, string> = opts.password ? { Password: opts.password } : {};
  const answer = await post(`${opts.controllerUrl.replace(/\/+$/, '')}/learn${as}`, headers, raw, opts.timeoutMs);
  if (!answer.ok) return answer;
  const { status, message, body } = answer.value;
  if (status === 200) return { ok: true, value: `learned as ${as}` };
  if (status === 204 || status === 208) return { ok: true, value: message || `not learned (${status})` };
  const error = (() => {
    try {
      return String((JSON.parse(body) as { error?: unknown }).error ?? '');
    } catch {
      return '';
    }
  })();
  return { ok: false, problem: `rspamd's controller answered ${status} ${error || message}`.trim() };
}

/** One POST with a whole body, bounded by `timeoutMs` from start to the end of the answer. */
function post(url: string, headers: Record<string, string | string[]>, body: Buffer, timeoutMs: number): Promise<Answer<{ status: number; message: string; body: string }>> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ ok: false, problem: `${url} is not a URL` });
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) }, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) return req.destroy(new Error(`rspamd's answer passed ${MAX_ANSWER_BYTES} bytes`));
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ ok: true, value: { status: res.statusCode ?? 0, message: printable(res.statusMessage ?? ''), body: Buffer.concat(chunks).toString('utf8') } }));
      res.on('error', (err) => resolve({ ok: false, problem: problemOf(err, url, timeoutMs) }));
    });
    req.on('error', (err) => resolve({ ok: false, problem: problemOf(err, url, timeoutMs) }));
    req.end(body);
  });
}

function problemOf(err: Error & { code?: string }, url: string, timeoutMs: number): string {
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return `rspamd at ${url} did not answer within ${timeoutMs} ms`;
  return `rspamd at ${url} could not be reached: ${err.code ?? err.message}`;
}

/** Header values are printable ASCII: a HELO or address with anything else is sent without it. */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, '').trim();
const round = (x: number) => Math.round(x * 100) / 100;
