// The box's ACME certificates while it runs: loads what <data_dir>/acme/ holds, orders what is missing or due
// (hourly, and at start), keeps each failure's reason and backoff in status.json, and tells the listeners
// (onChange) when a certificate changed so they swap it in without a restart. One name's failure never
// touches another's certificate.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Resolver } from 'node:dns/promises';
import type { Clock } from '../clock.ts';
import type { Log } from '../log.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import { Challenges } from './challenge.ts';
import { readIssued, readStatus, removeIssued, writeIssued, writeStatus, type AcmeStatus } from './files.ts';
import { wantedNames } from './names.ts';
import { order, type AcmeAccount } from './order.ts';
import { backoffMs, describe, due } from './policy.ts';

const CHECK_EVERY_MS = 3_600_000;

export interface Issued {
  key: Buffer;
  cert: Buffer;
  context: SecureContext;
}

export interface AcmeDeps {
  account: AcmeAccount;
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
  readonly challenges = new Challenges();
  private readonly issued = new Map<string, Issued>();
  private readonly status: AcmeStatus;
  private readonly listeners: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly deps: AcmeDeps) {
    this.status = readStatus(deps.account.dir);
    for (const name of new Set([deps.hostname, ...Object.keys(this.status)])) {
      const files = readIssued(deps.account.dir, name);
      if (!files) continue;
      try {
        this.hold(name, files.key, files.cert);
      } catch (err) {
        deps.log.warn('an ACME certificate on disk could not be read; it is ordered again', { name, err });
      }
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

  currentStatus(): AcmeStatus {
    return structuredClone(this.status);
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Orders what is due now, then again every hour. */
  start(): void {
    const run = () => {
      this.timer = null;
      void this.renewDue().finally(() => {
        if (!this.stopped) this.timer = setTimeout(run, CHECK_EVERY_MS).unref();
      });
    };
    run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => {});
  }

  /** Orders every wanted name that has no certificate or is past its renewal time; one pass at a time. */
  renewDue(now = this.deps.clock.now()): Promise<void> {
    this.running ??= this.pass(now).finally(() => (this.running = null));
    return this.running;
  }

  private async pass(now: number): Promise<void> {
    const { deps } = this;
    const names = await deps.policyDomains().then((domains) => wantedNames(deps.resolver, deps.hostname, domains)).catch((err: unknown) => {
      deps.log.warn('could not look up which mta-sts names point at this box; ordering the hostname only', { err });
      return [deps.hostname];
    });
    let changed = this.forget(names, now);
    for (const name of names) {
      if (this.stopped) break;
      if (!due(this.status[name], now)) continue;
      changed = (await this.renew(name, now)) || changed;
    }
    writeStatus(deps.account.dir, this.status);
    if (changed) for (const listener of this.listeners) listener();
  }

  private async renew(name: string, now: number): Promise<boolean> {
    const { deps } = this;
    const before = this.status[name] ?? { name, certificate: null, lastError: null, failures: 0, retryAt: null };
    try {
      // No CA validates a name the public DNS never resolves: asking would only spend the failed-validation allowance.
      const badName = name === deps.hostname ? hostnameProblem(name) : null;
      if (badName) throw new Error(badName.message);
      const { key, cert } = await (deps.order ?? order)(deps.account, name, this.challenges);
      this.hold(name, key, cert);
      writeIssued(deps.account.dir, name, key, cert);
      this.status[name] = { ...this.status[name], lastError: null, failures: 0, retryAt: null };
      deps.log.info('obtained a certificate by ACME', { name, expiresAt: this.status[name].certificate?.expiresAt, serial: this.status[name].certificate?.serial });
      return true;
    } catch (err) {
      const failures = before.failures + 1;
      const message = (err as Error).message || String(err);
      this.status[name] = { ...before, lastError: { message, at: new Date(now).toISOString() }, failures, retryAt: new Date(now + backoffMs(failures)).toISOString() };
      deps.log.warn('could not obtain a certificate by ACME; the current one stays in use', { name, err: message, failures, retryAt: this.status[name].retryAt });
      return false;
    }
  }

  // A policy host no longer wanted (its domain gone, or its name moved away) is not renewed; once its certificate
  // expired it is dropped, files and all, so doctor does not report it. The hostname is always wanted.
  private forget(wanted: string[], now: number): boolean {
    let dropped = false;
    for (const [name, s] of Object.entries(this.status)) {
      if (wanted.includes(name) || (s.certificate && Date.parse(s.certificate.expiresAt) > now)) continue;
      delete this.status[name];
      this.issued.delete(name);
      removeIssued(this.deps.account.dir, name);
      dropped = true;
    }
    return dropped;
  }

  private hold(name: string, key: Buffer, cert: Buffer): void {
    const context = createSecureContext({ key, cert });
    this.issued.set(name, { key, cert, context });
    const previous = this.status[name];
    this.status[name] = { name, certificate: describe(cert), lastError: previous?.lastError ?? null, failures: previous?.failures ?? 0, retryAt: previous?.retryAt ?? null };
  }
}
