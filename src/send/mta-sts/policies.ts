// Recipient domains' MTA-STS policies as delivery needs them (RFC 8461 3 and 5.1): the `_mta-sts` TXT record
// asked at most once a minute per domain, the policy fetched when its id changed or it expired, and kept in
// the store (mta_sts_policies) so a restart or a failed refresh still has it. A failed fetch is not retried for
// a few minutes, so a dead policy host does not stall every batch for its timeout.
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../../clock.ts';
import { get, run, type Query } from '../../db/query.ts';
import type { Store } from '../../db/store.ts';
import { fetchPolicy, type PolicyFetchOptions } from './fetch.ts';
import type { StsMode, StsPolicy } from './policy.ts';
import { joinTxt, parseStsRecord } from './records.ts';

export interface KnownPolicy {
  id: string;
  policy: StsPolicy;
  /** The file as served (TLS-RPT's policy-string). */
  text: string;
}

export interface StsLookup {
  policy: KnownPolicy | null;
  /** A policy the domain announces but the box could not get or read (RFC 8460 4.3.2.2), for the TLS report. */
  problem: { type: 'sts-policy-fetch-error' | 'sts-policy-invalid' | 'sts-webpki-invalid'; reason: string } | null;
}

export interface PoliciesOptions {
  /** The box's store: the cache is written as bookkeeping that answers nobody (acknowledged: false). */
  store: Pick<Store, 'read' | 'write'>;
  clock: Clock;
  resolver: Resolver;
  fetch: Omit<PolicyFetchOptions, 'resolver'>;
}

const TXT_CHECK_MS = 60_000;
const FAILED_FETCH_MS = 5 * 60_000;
const MAX_REMEMBERED = 10_000;

interface Row {
  policy_id: string;
  mode: StsMode;
  mx: string;
  max_age: number;
  policy_text: string;
  expires_at: number;
}

const cachedRow = (domain: string) => get<Row>('SELECT policy_id, mode, mx, max_age, policy_text, expires_at FROM mta_sts_policies WHERE domain = ?', domain);

function* storePolicy(domain: string, id: string, fetched: { policy: StsPolicy; text: string }, now: number): Query<void> {
  yield* run(
    `INSERT INTO mta_sts_policies (domain, policy_id, mode, mx, max_age, policy_text, fetched_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(domain) DO UPDATE SET policy_id = excluded.policy_id, mode = excluded.mode, mx = excluded.mx, max_age = excluded.max_age,
       policy_text = excluded.policy_text, fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
    domain, id, fetched.policy.mode, JSON.stringify(fetched.policy.mx), fetched.policy.maxAge, fetched.text, now, now + fetched.policy.maxAge * 1000,
  );
}

export class MtaStsPolicies {
  /** What the last TXT check and fetch decided, per domain, until `until`. */
  private readonly recent = new Map<string, { until: number; lookup: StsLookup }>();
  private readonly inFlight = new Map<string, Promise<StsLookup>>();

  constructor(private readonly opts: PoliciesOptions) {}

  async lookup(domain: string): Promise<StsLookup> {
    const name = domain.toLowerCase();
    const now = this.opts.clock.now();
    const known = this.recent.get(name);
    if (known && known.until > now) return this.stillValid(name, known.lookup);
    const running = this.inFlight.get(name);
    if (running) return running;
    const work = this.refresh(name).finally(() => this.inFlight.delete(name));
    this.inFlight.set(name, work);
    return work;
  }

  /** Cached policies (doctor): how many, and how many have expired without being needed since. */
  static *count(now: number): Query<{ policies: number; expired: number }> {
    return (yield* get<{ policies: number; expired: number }>('SELECT count(*) AS policies, coalesce(sum(expires_at <= ?), 0) AS expired FROM mta_sts_policies', now))!;
  }

  /** A remembered answer holds no policy past its expiry. */
  private async stillValid(domain: string, lookup: StsLookup): Promise<StsLookup> {
    if (!lookup.policy) return lookup;
    const cached = await this.cached(domain);
    return cached && cached.id === lookup.policy.id ? lookup : { policy: null, problem: lookup.problem };
  }

  private async refresh(domain: string): Promise<StsLookup> {
    const cached = await this.cached(domain);
    const remember = (lookup: StsLookup, ms: number) => {
      if (this.recent.size > MAX_REMEMBERED) this.recent.clear();
      this.recent.set(domain, { until: this.opts.clock.now() + ms, lookup });
      return lookup;
    };
    let txts: string[];
    try {
      txts = joinTxt(await this.opts.resolver.resolveTxt(`_mta-sts.${domain}`));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // No record: RFC 8461 3.1 keeps a cached policy until it expires (the domain may be moving providers).
      // DNS trouble: the same, and ask again soon.
      return remember({ policy: cached, problem: null }, code === 'ENODATA' || code === 'ENOTFOUND' ? TXT_CHECK_MS : 0);
    }
    const record = parseStsRecord(txts);
    if (!record) return remember({ policy: cached, problem: null }, TXT_CHECK_MS);
    if (cached && cached.id === record.id) return remember({ policy: cached, problem: null }, TXT_CHECK_MS);

    const fetched = await fetchPolicy(domain, { resolver: this.opts.resolver, ...this.opts.fetch });
    if (!fetched.ok) {
      // RFC 8461 5.1: a failed refresh keeps the unexpired cached policy; without one, deliver as if none.
      return remember({ policy: cached, problem: { type: fetched.type, reason: fetched.reason } }, FAILED_FETCH_MS);
    }
    const now = this.opts.clock.now();
    const policy: KnownPolicy = { id: record.id, policy: fetched.policy, text: fetched.text };
    await this.opts.store.write(() => storePolicy(domain, record.id, fetched, now), { acknowledged: false });
    return remember({ policy, problem: null }, TXT_CHECK_MS);
  }

  private async cached(domain: string): Promise<KnownPolicy | null> {
    const row = await this.opts.store.read(cachedRow(domain));
    if (!row || row.expires_at <= this.opts.clock.now()) return null;
    return { id: row.policy_id, policy: { mode: row.mode, mx: JSON.parse(row.mx) as string[], maxAge: row.max_age }, text: row.policy_text };
  }
}
