// Domain endpoints (API-SPEC.md 4.4 inbound setup, 4.5, 4.6 sending identities): create with DKIM key and
// records, list, show, switch marketing, tracking and the MTA-STS mode, verify against live DNS, inbound MX
// setup, provider detection and the Domain Connect consent link. All scoped to the caller's workspace. Also
// the one page open to anyone: the MTA-STS policy at mta-sts.<domain>/.well-known/mta-sts.txt (RFC 8461 3.3).
import { actorOf, recordAudit } from '../account/audit.ts';
import { z } from 'zod';
import type { App } from '../context.ts';
import type { Query } from '../db/query.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter, pageRouter } from '../http/server.ts';
import { principalOf, requireAuth } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { dkimName, dmarcName, dmarcValue, inboundRecord } from '../dns/records.ts';
import { MTA_STS_MODES, MTA_STS_PATH } from '../dns/mta-sts-policy.ts';
import { policyRecords, servedPolicy, setMtaStsMode, wantsMtaSts } from './mta-sts.ts';
import { checkInboundMx } from '../dns/verify.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import { detectProvider } from '../dns/providers.ts';
import { relativeHost } from '../dns/zone.ts';
import { normaliseDomain } from '../mail/domain-name.ts';
import { generateDkimKey, generateEd25519Key, activeDkimKey, RotationInProgress, startRotation } from './dkim-keys.ts';
import {
  checksOf,
  createDomain,
  deleteDomain,
  DomainExists,
  getDomain,
  listDomains,
  presentDomain,
  presentDomainSummary,
  presentInbound,
  presentRotation,
  recordInbound,
  setSwitches,
  setUnsubscribeUrls,
  verifiedDomainNames,
  type DomainRow,
} from './domains.ts';
import { verifyDomain } from './verification.ts';
import { connectLink, domainConnectAvailability } from './connect.ts';
import { senderAddresses } from '../emails/senders.ts';
import { addDomainEvent } from './domain-events.ts';
import { inboxAddresses } from '../inboxes/inboxes.ts';

const CreateBody = z.object({ name: z.string().max(300) });
// A first-party integration's one-click unsubscribe URLs (API-SPEC.md 4.2 rule 3; RFC 8058 wants HTTPS), kept as
// the URL parser writes them: a bare origin gains its `/`, so `https://app.example.com` never matches
// `https://app.example.com.evil.test/`.
const unsubscribePrefix = z.string().max(500).transform((s, ctx) => {
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be an absolute https URL such as https://app.example.com/unsubscribe/' });
    return z.NEVER;
  }
  const problem =
    url.protocol !== 'https:' ? 'must be an https URL: one-click unsubscribe (RFC 8058) needs HTTPS' :
    url.username || url.password ? 'must not carry a user name or password' :
    url.hash ? 'must not carry a #fragment' : null;
  if (!problem) return url.href;
  ctx.addIssue({ code: 'custom', message: problem });
  return z.NEVER;
});
const MAX_UNSUBSCRIBE_URLS = 10;
const PatchBody = z
  .object({
    marketing: z.boolean(),
    open_tracking: z.boolean(),
    click_tracking: z.boolean(),
    unsubscribe_urls: z.array(unsubscribePrefix).max(MAX_UNSUBSCRIBE_URLS),
    mta_sts_mode: z.enum(MTA_STS_MODES as [string, ...string[]], { message: `must be one of ${MTA_STS_MODES.join(', ')}` }),
  })
  .partial()
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one of marketing, open_tracking, click_tracking, unsubscribe_urls, mta_sts_mode' });
const DomainQuery = z.object({ domain_id: z.string().min(1, 'is required') });
const ConnectQuery = z.object({ domain_id: z.string().min(1, 'is required'), next: z.string().min(1, 'is required').max(2048) });

const TRANSPORT_REASONS: Record<string, string> = {
  'MTA-STS': 'Tells senders that this domain\'s mail must reach it over TLS, and which policy to fetch; its id changes with the policy (mode), so publish it again after switching modes.',
  'MTA-STS-HOST': 'The name senders fetch the MTA-STS policy from: this box serves it, with a certificate for the name.',
  'TLS-RPT': 'Senders send a daily report of their TLS connections to this domain\'s MX to this box, which reads them.',
};

/** GET /.well-known/mta-sts.txt for Host mta-sts.<domain> (http/host-check.ts lets those names in for it alone). */
export function mtaStsPages(app: App) {
  const r = pageRouter();
  r.get(MTA_STS_PATH, async (ctx) => {
    const policy = await app.store.read(servedPolicy(ctx.hostname, app.config.hostname));
    if (policy === null) throw notFound('MTA-STS policy');
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = policy;
  });
  return r;
}

export function domainRoutes(app: App) {
  const { store, clock, config } = app;
  const r = apiRouter();
  const auth = requireAuth(config.publicUrl);
  // The inbound MX names the box: neither offered nor checked while its name cannot be right (dns/box-name.ts).
  // A local domain (mailwright try, on a .localhost name) needs no MX, so its name does not matter.
  const refuseUnusableHostname = () => {
    const problem = hostnameProblem(config.hostname);
    if (problem) throw new ApiError(409, 'hostname_unusable', `${problem.message} To fix: ${problem.fix}.`);
  };
  // MTA-STS and TLS-RPT (RFC 8461, RFC 8460) for a domain that receives here; none for a local domain.
  const transportRecords = (row: DomainRow) => (wantsMtaSts(row) ? policyRecords(row, config.hostname) : []);
  function* foundDomain(workspaceId: string, id: string): Query<DomainRow> {
    const row = yield* getDomain(workspaceId, id);
    if (!row) throw notFound('Domain');
    return row;
  }
  const domainOf = (workspaceId: string, id: string) => store.read(foundDomain(workspaceId, id));
  /** The domain as GET /domains/:id shows it, read in one query. */
  function* shownDomain(workspaceId: string, id: string) {
    return yield* presentDomain(yield* foundDomain(workspaceId, id), config);
  }

  r.post('/domains', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const name = normaliseDomain(body.name);
    if (!name.ok) throw validationError('name', name.reason);
    const p = principalOf(ctx);
    const workspaceId = p.workspaceId;
    const key = await generateDkimKey();
    // dkim_ed25519: a second key (RFC 8463) from the start; its signature is added once DNS serves its record.
    const ed25519 = config.dkimEd25519 ? await generateEd25519Key() : undefined;
    let row: DomainRow;
    try {
      row = await store.write(function* () {
        const made = yield* createDomain(clock, workspaceId, name.name, key, ed25519);
        const now = clock.now();
        yield* recordAudit(now, actorOf(p, ctx.ip), { workspaceId, action: 'domain.created', target: { type: 'domain', id: made.id, name: made.name } });
        yield* addDomainEvent(now, { workspaceId, domainId: made.id, type: 'domain.created', data: { domain: { id: made.id, name: made.name, status: made.status } } });
        return made;
      });
    } catch (err) {
      if (err instanceof DomainExists) {
        // Never who holds it: a workspace must not learn another's domains from this answer.
        throw new ApiError(409, 'domain_exists', err.elsewhere ? `The domain ${name.name}, a domain it belongs to or one of its subdomains is already in use on this box` : `The domain ${name.name} is already in this workspace`);
      }
      throw err;
    }
    const shown = await store.read(presentDomain(row, config));
    ctx.status = 201;
    ctx.body = { id: shown.id, name: shown.name, status: shown.status, setup_status: shown.setup_status, records: shown.records, hostnameProblem: shown.hostnameProblem, createdAt: shown.createdAt };
  });

  r.get('/domains', auth, async (ctx) => {
    const page = parsePage(ctx.query);
    ctx.body = pageOf((await store.read(listDomains(principalOf(ctx).workspaceId, page))).map(presentDomainSummary), page);
  });

  r.get('/domains/:id', auth, async (ctx) => {
    ctx.body = await store.read(shownDomain(principalOf(ctx).workspaceId, ctx.params.id));
  });

  r.patch('/domains/:id', auth, async (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const p = principalOf(ctx);
    const row = await domainOf(p.workspaceId, ctx.params.id);
    if (body.marketing === true && row.status !== 'verified') {
      throw new ApiError(403, 'domain_not_verified', `Marketing mail needs ${row.name} verified first (POST /domains/${row.id}/verify)`);
    }
    const { unsubscribe_urls: prefixes, mta_sts_mode: mode, ...switches } = body;
    await store.write(function* () {
      yield* setSwitches(row.workspace_id, row.id, switches);
      if (prefixes) yield* setUnsubscribeUrls(row.workspace_id, row.id, [...new Set(prefixes)]);
      // The policy's id follows its text, so the _mta-sts record to publish changes with the mode.
      if (mode) yield* setMtaStsMode(row.workspace_id, row.id, mode as (typeof MTA_STS_MODES)[number]);
      yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: row.workspace_id, action: 'domain.updated', target: { type: 'domain', id: row.id, name: row.name }, data: body });
    });
    ctx.body = await store.read(shownDomain(row.workspace_id, row.id));
  });

  r.delete('/domains/:id', auth, async (ctx) => {
    const p = principalOf(ctx);
    const deleted = await store.write(function* () {
      const row = yield* getDomain(p.workspaceId, ctx.params.id);
      if (!row || !(yield* deleteDomain(p.workspaceId, row.id))) return false;
      const now = clock.now();
      yield* recordAudit(now, actorOf(p, ctx.ip), { workspaceId: row.workspace_id, action: 'domain.deleted', target: { type: 'domain', id: row.id, name: row.name } });
      yield* addDomainEvent(now, { workspaceId: row.workspace_id, domainId: row.id, type: 'domain.deleted', data: { domain: { id: row.id, name: row.name, status: row.status } } });
      return true;
    });
    if (!deleted) throw notFound('Domain');
    ctx.body = { ok: true };
  });

  r.post('/domains/:id/verify', auth, async (ctx) => {
    const p = principalOf(ctx);
    const row = await verifyDomain(app, await domainOf(p.workspaceId, ctx.params.id), 'manual', actorOf(p, ctx.ip));
    if (!row) throw notFound('Domain');
    const shown = await store.read(presentDomain(row, config));
    ctx.body = { domain: { id: row.id, status: row.status }, status: row.status, checks: shown.checks, setup_status: shown.setup_status, records: shown.records, dns_issues: shown.dns_issues, hostnameProblem: shown.hostnameProblem };
  });

  // A new key now, signing only once DNS serves it (the periodic re-check or a verify notices).
  r.post('/domains/:id/dkim/rotate', auth, async (ctx) => {
    const p = principalOf(ctx);
    const row = await domainOf(p.workspaceId, ctx.params.id);
    const key = await generateDkimKey();
    await store.write(function* () {
      try {
        yield* startRotation(clock, row.workspace_id, row.id, key);
        yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: row.workspace_id, action: 'domain.dkim_rotated', target: { type: 'domain', id: row.id, name: row.name }, data: { selector: key.selector } });
      } catch (err) {
        if (err instanceof RotationInProgress) throw new ApiError(409, 'rotation_in_progress', `A new DKIM key for ${row.name} is already waiting for its DNS record: publish the record GET /domains/${row.id} shows under dkimRotation`);
        throw err;
      }
    });
    ctx.status = 201;
    ctx.body = { domain: { id: row.id, name: row.name }, status: 'pending', ...(await store.read(presentRotation(row))) };
  });

  r.post('/domains/:id/inbound/setup', auth, async (ctx) => {
    const p = principalOf(ctx);
    let row = await domainOf(p.workspaceId, ctx.params.id);
    if (!row.local) refuseUnusableHostname();
    if (row.inbound_status === 'not_configured') {
      const before = row;
      row = await store.write(function* () {
        yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: before.workspace_id, action: 'domain.inbound_setup', target: { type: 'domain', id: before.id, name: before.name } });
        return yield* recordInbound(clock, before, 'dns_pending', undefined);
      });
    }
    ctx.body = { domain: row.name, status: row.inbound_status, record: inboundRecord(row.name, config.hostname), records: transportRecords(row) };
  });

  r.post('/domains/:id/inbound/verify', auth, async (ctx) => {
    let row = await domainOf(principalOf(ctx).workspaceId, ctx.params.id);
    if (!row.local) refuseUnusableHostname();
    const record = inboundRecord(row.name, config.hostname);
    const records = transportRecords(row);
    if (row.inbound_status === 'not_configured') {
      ctx.body = { domain: row.name, status: row.inbound_status, record, records, message: `Inbound mail is not set up for ${row.name}: POST /domains/${row.id}/inbound/setup first` };
      return;
    }
    // A local domain (mailwright try) receives without DNS: nothing to check.
    if (row.local) {
      ctx.body = { domain: row.name, status: row.inbound_status, record, records };
      return;
    }
    const check = await checkInboundMx(app.dns, row.name, config.hostname);
    // A temporary DNS failure leaves the state as it was; a definite answer decides it.
    const status = check.state === 'verified' ? 'ready' : check.state === 'failed' ? 'dns_pending' : row.inbound_status;
    const before = row;
    row = await store.write(() => recordInbound(clock, before, status, check.issue));
    ctx.body = { domain: row.name, status: row.inbound_status, record, records, ...(check.issue ? { message: check.issue.message, found: check.issue.found } : {}) };
  });

  r.get('/dns/provider', auth, async (ctx) => {
    const { domain_id } = parseInput(DomainQuery, ctx.query, 'query');
    const row = await domainOf(principalOf(ctx).workspaceId, domain_id);
    const key = (await store.read(activeDkimKey(row.workspace_id, row.id)))!;
    // A local domain (mailwright try) is in no zone: nothing is asked of DNS.
    const detection: Awaited<ReturnType<typeof detectProvider>> = row.local ? { detectionStatus: 'no_nameservers', detected: 'unknown', zone: '', nameservers: [] } : await detectProvider(app.dns, row.name);
    const zone = detection.zone || row.name;
    const host = (fqdn: string) => relativeHost(fqdn, zone);
    const checks = checksOf(row);
    const inbound = presentInbound(row, config.hostname);
    ctx.body = {
      ...detection,
      hostnameProblem: hostnameProblem(config.hostname),
      recordHosts: {
        dkim: host(dkimName({ selector: key.selector, domain: row.name })),
        returnPathMx: host(row.return_path),
        returnPathSpf: host(row.return_path),
        dmarc: host(dmarcName(row.name)),
        inboundMx: host(row.name),
      },
      inbound: { available: true, domain: inbound.status === 'not_configured' ? null : row.name, status: inbound.status, record: inbound.record },
      recommendations: [
        {
          record: 'DMARC',
          type: 'TXT',
          name: dmarcName(row.name),
          host: host(dmarcName(row.name)),
          value: dmarcValue(row.name),
          reason: 'A DMARC policy tells receivers what to do with mail that fails SPF and DKIM; Gmail and Yahoo expect one from bulk senders. Start with p=none, then tighten. Receivers send their daily reports (rua) to this box, which reads them.',
        },
        ...(hostnameProblem(config.hostname) ? [] : transportRecords(row)).map((rec) => ({ ...rec, host: host(rec.name), reason: TRANSPORT_REASONS[rec.record] })),
      ],
      authentication: { verified: row.status === 'verified', dkim: checks.dkim, spf: checks.spf, returnPath: checks.returnPath, dmarc: checks.dmarc },
      providers: { domainConnect: detection.zone ? await domainConnectAvailability(app, detection.zone) : { available: false, providerName: null } },
    };
  });

  r.get('/dns/domain-connect/connect', auth, async (ctx) => {
    const q = parseInput(ConnectQuery, ctx.query, 'query');
    const row = await domainOf(principalOf(ctx).workspaceId, q.domain_id);
    let next: URL;
    try {
      next = new URL(q.next);
    } catch {
      throw validationError('next', `must be an absolute URL on ${new URL(config.publicUrl).origin}`);
    }
    if (next.origin !== new URL(config.publicUrl).origin) throw validationError('next', `must be a URL on this box's public origin ${new URL(config.publicUrl).origin}`);
    ctx.body = await connectLink(app, row, next.href);
  });

  r.get('/sending-identities', auth, async (ctx) => {
    // Verified domains, and the addresses owned (inboxes) or used (mail went out from them).
    const workspaceId = principalOf(ctx).workspaceId;
    const owned = await store.read(
      (function* () {
        return { inboxes: yield* inboxAddresses(workspaceId), domains: yield* verifiedDomainNames(workspaceId), senders: yield* senderAddresses(workspaceId) };
      })(),
    );
    const addresses = [...new Set([...owned.senders, ...owned.inboxes])].sort();
    const localParts = [...new Set(addresses.map((a) => a.slice(0, a.lastIndexOf('@'))))].sort();
    ctx.body = { domains: owned.domains, addresses, localParts };
  });

  return r;
}
