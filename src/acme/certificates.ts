// The box's ACME certificates while a node runs. The store holds them (stored.ts), so every node of a box serves
// the same: a node loads them at start, looks every POLL_MS for one another node obtained or renewed, and tells
// the listeners (onChange) so they swap it in without a restart. Ordering what is missing or due (at start, then
// hourly) is done by one node at a time: a pass holds the box's 'acme' lease (cluster/once.ts), and reads each
// name's status from the store first, so a node that comes after finds the work done. One name's failure never
// touches another's certificate.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import type { Log } from '../log.ts';
import type { Store } from '../db/store.ts';
import { oneAtATime } from '../cluster/once.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import { Challenges } from './challenge.ts';
import { importFiles } from './files.ts';
import { wantedNames } from './names.ts';
import { order, type AcmeAccount } from './order.ts';
import { backoffMs, describe, due } from './policy.ts';
import { accountKey, certificateVersions, dropName, dropStaleChallenges, putCertificate, putStatus, readCertificates, readStatus, type AcmeStatus } from './stored.ts';

const CHECK_EVERY_MS = 3_600_000;
/** How often a node looks for a certificate another node obtained: one small read. */
export const POLL_MS = 15_000;
/** Longer than a pass takes: a node that stopped mid-pass keeps the others from ordering this long. */
const PASS_LEASE_MS = 15 * 60_000;

export interface Issued {
  key: Buffer;
  cert: Buffer;
  context: SecureContext;
}

export interface AcmeDeps {
  store: Store;
  /** This node: the pass's lease names it. */
  node: { id: number };
  account: Omit<AcmeAccount, 'key'>;
  /** Where an earlier release kept <data_dir>/acme/, imported at start. */
  dataDir: string;
  hostname: string;
  /** The domains whose inbound mail is ready: each one's mta-sts.<domain> gets a certificate once it points here. */
  policyDomains: () => Promise<string[]>;
  resolver: Resolver;
  clock: Clock;
  log: Log;
  /** Orders one certificate (order.ts); a test may pass another. */
  order?: typeof order;
}

export class AcmeCertificates {
  readonly challenges: Challenges;
  private readonly issued = new Map<string, Issued & { version: number }>();
  private status: AcmeStatus = {};
  private readonly listeners: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;
  private poller: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private refreshing: Promise<boolean> | null = null;
  private stopped = false;

  constructor(private readonly deps: AcmeDeps) {
    this.challenges = new Challenges(deps);
  }

  /** Imports an earlier release's files, then holds what the store has: before the listeners open. */
  async load(): Promise<void> {
    const { deps } = this;
    try {
      await importFiles(deps.store, deps.dataDir, deps.clock.now(), deps.log);
      await this.refresh();
    } catch (err) {
      deps.log.warn('could not read the ACME certificates from the store yet; the fallback certificate is served until then', { err });
    }
  }

  /** The hostname's certificate, or null until one was issued. */
  forHostname(): Issued | null {
    return this.issued.get(this.deps.hostname) ?? null;
  }

  /** The certificate for a TLS client's server name (SNI), or null: the caller falls back to the hostname's. */
  contextFor(servername: string): SecureContext | null {
    return this.issued.get(servername.toLowerCase().replace(/\.$/, ''))?.context ?? null;
  }

  /** Every name a certificate is held for. */
  names(): string[] {
    return [...this.issued.keys()];
  }

  /** Each name's certificate and last outcome, as of this node's last look at the store. */
  currentStatus(): AcmeStatus {
    return structuredClone(this.status);
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Orders what is due now, then again every hour; looks for other nodes' certificates every POLL_MS. */
  start(): void {
    const check = () => {
      this.timer = null;
      void this.renewDue().finally(() => {
        if (!this.stopped) this.timer = setTimeout(check, CHECK_EVERY_MS).unref();
      });
    };
    check();
    this.poller = setInterval(() => void this.refresh().catch((err: unknown) => this.deps.log.warn('could not look for new ACME certificates in the store', { err })), POLL_MS);
    this.poller.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.poller) clearInterval(this.poller);
    await this.running?.catch(() => {});
    await this.refreshing?.catch(() => {});
  }

  /**
   * Orders every wanted name that has no certificate or is past its renewal time, unless another node's pass is
   * under way (it does the same); one pass at a time on this node too.
   */
  renewDue(now = this.deps.clock.now()): Promise<void> {
    this.running ??= oneAtATime(this.deps, 'acme', PASS_LEASE_MS, () => this.pass(now))
      .then((ran) => {
        if (!ran) this.deps.log.debug('another node is ordering ACME certificates; this one waits for them');
      })
      .catch((err: unknown) => this.deps.log.warn('the ACME check failed; it runs again within the hour', { err }))
      .finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Reads the store: certificates whose updated_at moved are loaded, names gone are dropped, the status replaced.
   * Tells the listeners when a certificate changed; resolves with whether one did.
   */
  refresh(): Promise<boolean> {
    this.refreshing ??= this.reload().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private async reload(): Promise<boolean> {
    const { store, log } = this.deps;
    const versions = await store.read(certificateVersions());
    const stale = versions.filter((v) => this.issued.get(v.name)?.version !== v.updated_at).map((v) => v.name);
    const rows = stale.length ? await store.read(readCertificates(stale)) : [];
    const status = await store.read(readStatus());
    // Applied at once, after every read: a caller never sees a certificate without its status.
    let changed = false;
    for (const row of rows) {
      try {
        const [key, cert] = [Buffer.from(row.key_pem), Buffer.from(row.cert_pem)];
        this.issued.set(row.name, { key, cert, context: createSecureContext({ key, cert }), version: row.updated_at });
        changed = true;
      } catch (err) {
        log.warn('an ACME certificate in the store could not be read; it is ordered again', { name: row.name, err });
      }
    }
    for (const name of this.issued.keys()) {
      if (versions.some((v) => v.name === name)) continue;
      this.issued.delete(name);
      changed = true;
    }
    this.status = status;
    if (changed && !this.stopped) for (const listener of this.listeners) listener();
    return changed;
  }

  private async pass(now: number): Promise<void> {
    const { deps } = this;
    // What another node ordered or recorded since: the status decides what is due.
    await this.refresh();
    await deps.store.write(() => dropStaleChallenges(deps.clock.now()), { acknowledged: false });
    const names = await deps.policyDomains().then((domains) => wantedNames(deps.resolver, deps.hostname, domains)).catch((err: unknown) => {
      deps.log.warn('could not look up which mta-sts names point at this box; ordering the hostname only', { err });
      return [deps.hostname];
    });
    await this.forget(names, now);
    for (const name of names) {
      if (this.stopped) break;
      if (!due(this.status[name], now)) continue;
      await this.renew(name, now);
    }
    await this.refresh();
  }

  private async renew(name: string, now: number): Promise<void> {
    const { deps } = this;
    const before = this.status[name] ?? { name, certificate: null, lastError: null, failures: 0, retryAt: null };
    const account = { ...deps.account, key: (make: () => Buffer) => deps.store.write(() => accountKey(make)) };
    try {
      // No CA validates a name the public DNS never resolves: asking would only spend the failed-validation allowance.
      const badName = name === deps.hostname ? hostnameProblem(name) : null;
      if (badName) throw new Error(badName.message);
      const { key, cert } = await (deps.order ?? order)(account, name, this.challenges);
      const at = deps.clock.now();
      await deps.store.write(function* () {
        yield* putCertificate(name, key, cert, at);
        yield* putStatus({ name, lastError: null, failures: 0, retryAt: null }, at);
      });
      deps.log.info('obtained a certificate by ACME', { name, expiresAt: describe(cert).expiresAt, serial: describe(cert).serial });
    } catch (err) {
      const failures = before.failures + 1;
      const message = (err as Error).message || String(err);
      const failed = { name, lastError: { message, at: new Date(now).toISOString() }, failures, retryAt: new Date(now + backoffMs(failures)).toISOString() };
      this.status[name] = { ...before, ...failed };
      await deps.store.write(() => putStatus(failed, deps.clock.now()));
      deps.log.warn('could not obtain a certificate by ACME; the current one stays in use', { name, err: message, failures, retryAt: failed.retryAt });
    }
  }

  // A policy host no longer wanted (its domain gone, or its name moved away) is not renewed; once its certificate
  // expired it is dropped, so doctor does not report it. The hostname is always wanted.
  private async forget(wanted: string[], now: number): Promise<void> {
    for (const [name, s] of Object.entries(this.status)) {
      if (wanted.includes(name) || (s.certificate && Date.parse(s.certificate.expiresAt) > now)) continue;
      await this.deps.store.write(() => dropName(name));
      delete this.status[name];
    }
  }
}
