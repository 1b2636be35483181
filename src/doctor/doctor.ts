// `mailwright doctor`: what this box needs from the world and whether it has it. The box's own name and
// addresses (A/AAAA, PTR confirmed forward), whether `serve` listens and ports 25 and 587 answer on those
// addresses, per domain which DNS records are missing or wrong with the exact record to publish (MTA-STS and
// TLS-RPT too once it receives here, and its MTA-STS policy fetched as a sender would), the box's health
// (health.ts), the way out (outbound.ts), and on PostgreSQL the server and the nodes (cluster.ts). Read-only:
// it changes no state, so it is safe beside a running server.
import { connect } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/config.ts';
import type { Db } from '../db/open.ts';
import type { Store } from '../db/store.ts';
import { createResolver, reverseLookup } from '../dns/resolver.ts';
import { boxAddresses, checkDomain, checkInboundMx, type RecordCheck } from '../dns/verify.ts';
import { inboundRecord, namesTheBox, recordFor, requiredRecords } from '../dns/records.ts';
import { hostnameProblem } from '../dns/box-name.ts';
import { allDomains, type DomainRow } from '../domains/domains.ts';
import { overlappingClaims } from '../domains/claims.ts';
import { domainDns } from '../domains/verification.ts';
import { transportFindings, wantsMtaSts } from '../domains/mta-sts.ts';
import { checkMtaSts } from '../dns/mta-sts-check.ts';
import { getWorkspace } from '../account/workspaces.ts';
import { loadOrCreateSigningKey, publicKeyFromRecords, publicKeyRecord, SIGNING_KEY_FILE } from '../dns/domain-connect-keys.ts';
import { KEY_HOST } from '../domains/connect.ts';
import { certificateCheck, growthCheck, queueCheck, reachabilityChecks, storageCheck, webhookChecks, type Check } from './health.ts';
import { outboundChecks } from './outbound.ts';
import { acmeChecks } from '../acme/report.ts';
import { outboundTlsChecks } from './outbound-tls.ts';
import { databaseChecks, nodeChecks } from './cluster.ts';

interface Report {
  problems: number;
  lines: string[];
}

const ok = (r: Report, text: string) => r.lines.push(`  ✓ ${text}`);
const note = (r: Report, text: string) => r.lines.push(`  · ${text}`);
const bad = (r: Report, text: string, fix?: string) => {
  r.problems++;
  r.lines.push(`  ✗ ${text}`);
  if (fix) r.lines.push(`      fix: ${fix}`);
};

function listening(host: string, port: number): Promise<boolean> {
  const target = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return new Promise((resolve) => {
    const socket = connect({ host: target, port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

async function checkBox(config: Config, resolver: Resolver, r: Report): Promise<void> {
  r.lines.push(`Box ${config.hostname} (resolvers ${config.dnsServers.join(', ')})`);
  const http = await listening(config.httpHost, config.httpPort);
  const smtp = await listening(config.smtpHost, config.smtpPort);
  const submission = config.submissionPort !== 0 && (await listening(config.smtpHost, config.submissionPort));
  if (config.submissionPort) {
    if (submission) ok(r, `SMTP submission is listening on port ${config.submissionPort}`);
    else bad(r, `SMTP submission is not listening on port ${config.submissionPort}`, 'start serve, or set submission_port = 0 if you do not want it');
  }
  if (http && smtp) ok(r, `serve is listening: HTTP ${config.httpHost}:${config.httpPort}, SMTP ${config.smtpHost}:${config.smtpPort}`);
  else bad(r, `serve is not listening on ${[!http && `HTTP ${config.httpHost}:${config.httpPort}`, !smtp && `SMTP ${config.smtpHost}:${config.smtpPort}`].filter(Boolean).join(' or ')}`, 'start it: systemctl start mailwright (or scripts/mailwright serve)');

  // Its A and PTR records are moot (and their fixes would name it) until the name itself can be right.
  const badName = hostnameProblem(config.hostname);
  if (badName) return bad(r, badName.message, badName.fix);
  const addresses = await boxAddresses(resolver, config.hostname);
  if (!addresses.ok) {
    if (addresses.missing) bad(r, `${config.hostname} has no A or AAAA record`, `publish an A record for ${config.hostname} with this box's public address`);
    else bad(r, `looking up ${config.hostname} failed (${addresses.code})`, 'check MAILWRIGHT_DNS_SERVERS');
    return;
  }
  ok(r, `${config.hostname} has address ${addresses.value.join(', ')}`);
  for (const ip of addresses.value) {
    const names = await reverseLookup(resolver, ip).catch(() => [] as string[]);
    const matches = names.includes(config.hostname);
    if (matches) ok(r, `${ip} has PTR ${config.hostname} (forward-confirmed)`);
    else bad(r, `${ip} has ${names.length ? `PTR ${names.join(', ')}` : 'no PTR record'}, not ${config.hostname}: receivers distrust mail from it`, `ask your VPS provider to set the reverse DNS of ${ip} to ${config.hostname}`);
  }
  // Ports 25 and 587 on those addresses, greeting as senders and clients reach them (what a connection from
  // the box itself can prove is in health.ts); a port serve does not listen on was reported above.
  const ports: Array<{ name: string; port: number }> = [];
  if (smtp) ports.push({ name: 'SMTP', port: config.smtpPort });
  if (submission) ports.push({ name: 'submission', port: config.submissionPort });
  report(r, await reachabilityChecks(config, addresses.value, ports));
}

function report(r: Report, checks: Check[]): void {
  for (const c of checks) {
    if (c.skipped) note(r, c.text);
    else if (c.ok) ok(r, c.text);
    else bad(r, c.text, c.fix);
  }
}

/** `nameOk` false: the records naming the box (return-path MX and SPF) wait for its hostname, reported once above. */
function reportChecks(r: Report, checks: RecordCheck[], records: ReturnType<typeof requiredRecords>, nameOk: boolean): void {
  for (const check of checks) {
    const want = recordFor(records, check)!;
    const label = `${check.record.padEnd(5)} ${want.name} ${want.type}`;
    if (!nameOk && namesTheBox(want)) note(r, `${label}: shown once the box's hostname is a public name (see above)`);
    else if (check.state === 'verified') ok(r, label);
    else if (check.state === 'pending') bad(r, `${label}: ${check.issue?.message}`, 'run doctor again in a minute');
    else {
      const value = want.type === 'MX' ? `${want.priority} ${want.value}` : JSON.stringify(want.value);
      bad(r, `${label}: ${check.issue?.message}${check.record === 'DMARC' ? ' (recommended)' : ''}`, `publish ${want.name} ${want.type} ${value}`);
    }
  }
}

// The CA store is Node's (NODE_EXTRA_CA_CERTS adds to it), as a sender's would be; the port is 443 outside a lab.
async function reportMtaSts(config: Config, resolver: Resolver, row: DomainRow, r: Report): Promise<void> {
  const checks = await checkMtaSts(resolver, { domain: row.name, hostname: config.hostname, mode: row.mta_sts_mode }, { resolver, allowPrivate: config.allowPrivateFetch, port: config.mtaStsPort });
  for (const f of transportFindings(row, config.hostname, checks)) {
    const label = `${f.record} ${f.label}`;
    if (f.state === 'verified') ok(r, label);
    else bad(r, `${label}: ${f.message}`, f.fix ?? undefined);
  }
  if (row.mta_sts_mode === 'testing') {
    note(r, `MTA-STS mode is testing: senders report TLS failures but still deliver; switch to enforce (PATCH /api/v1/domains/${row.id} {"mta_sts_mode": "enforce"}) once the checks above pass and TLS reports show no failures`);
  }
}

// The consent links the box signs are checked by providers against this record (Domain Connect spec,
// "Digitally Sign Requests"); the key exists once a first link was made.
async function checkDomainConnectKey(config: Config, resolver: Resolver, r: Report): Promise<void> {
  if (!existsSync(join(config.dataDir, SIGNING_KEY_FILE))) return;
  const name = `${KEY_HOST}.${config.domainConnectProviderId}`;
  const want = publicKeyRecord(await loadOrCreateSigningKey(config.dataDir));
  r.lines.push('', 'Domain Connect');
  const published = await resolver.resolveTxt(name).then(
    (records) => records.map((parts) => parts.join('')),
    () => [] as string[],
  );
  let matches = false;
  try {
    matches = published.length > 0 && publicKeyFromRecords(published).equals(publicKeyFromRecords([want]));
  } catch {}
  if (matches) ok(r, `${name} TXT publishes the signing key`);
  else bad(r, `${name} TXT does not publish this box's signing key: providers will refuse its consent links`, `publish ${name} TXT "${want}"`);
}

// A database from before domains were claimed box-wide may hold one name (or a name and its subdomain) in
// two workspaces; routing follows the older claim, and the younger row should go.
async function checkClaims(store: Pick<Store, 'read'>, r: Report): Promise<void> {
  const overlaps = await store.read(overlappingClaims());
  if (overlaps.length === 0) return;
  r.lines.push('', 'Domains claimed by two workspaces');
  for (const { domain, holder } of overlaps) {
    const names = new Map<string, string>();
    for (const id of [domain.workspace_id, holder.workspace_id]) names.set(id, (await store.read(getWorkspace(id)))?.name ?? id);
    const workspace = (id: string) => names.get(id)!;
    bad(
      r,
      `${domain.name} (${domain.id}) in workspace ${workspace(domain.workspace_id)} overlaps ${holder.name} (${holder.id}) of workspace ${workspace(holder.workspace_id)}, which added it first: mail for it goes to ${workspace(holder.workspace_id)} only`,
      `delete ${domain.id} with a key of workspace ${workspace(domain.workspace_id)}: DELETE /api/v1/domains/${domain.id}`,
    );
  }
}

/** `db`: the data directory's SQLite database, whose file and free pages are checked; absent on PostgreSQL. */
export async function doctor(config: Config, store: Pick<Store, 'read' | 'dialect'>, db: Db | null, write: (line: string) => void = console.log): Promise<number> {
  const resolver = createResolver(config.dnsServers, { timeoutMs: 3000, tries: 2 });
  const r: Report = { problems: 0, lines: [] };
  await checkBox(config, resolver, r);

  const domains = await store.read(allDomains());
  if (domains.length === 0) r.lines.push('', 'No domains yet: add one with POST /api/v1/domains.');
  const nameOk = hostnameProblem(config.hostname) === null;
  for (const row of domains) {
    if (row.local) {
      r.lines.push('', `Domain ${row.name}: local to mailwright try, never looked up in DNS`);
      continue;
    }
    const dns = await store.read(domainDns(config, row));
    r.lines.push('', `Domain ${row.name} (workspace ${(await store.read(getWorkspace(row.workspace_id)))?.name}, ${row.status})`);
    reportChecks(r, await checkDomain(resolver, dns), requiredRecords(dns), nameOk);
    if (row.inbound_status !== 'not_configured' && !nameOk) note(r, `MX    ${row.name}: shown once the box's hostname is a public name (see above)`);
    else if (row.inbound_status !== 'not_configured') {
      const inbound = await checkInboundMx(resolver, row.name, config.hostname);
      const want = inboundRecord(row.name, config.hostname);
      if (inbound.state === 'verified') ok(r, `MX    ${row.name}: inbound mail reaches this box`);
      else bad(r, `MX    ${row.name}: ${inbound.issue?.message}`, `publish ${want.name} MX ${want.value}`);
    }
    if (wantsMtaSts(row) && nameOk) await reportMtaSts(config, resolver, row, r);
  }
  await checkClaims(store, r);
  await checkDomainConnectKey(config, resolver, r);
  r.lines.push('', 'This box');
  // With acme = true the ACME certificate is the one served once issued; until then the fallback is, so both show.
  const acme = await store.read(acmeChecks(config, Date.now()));
  const served = acme.some((c) => c.name === config.hostname && c.issued) ? [] : [certificateCheck(config, Date.now())];
  const storage = db ? [storageCheck(config, db)] : await store.read(databaseChecks());
  report(r, [...served, ...acme, await store.read(queueCheck(Date.now())), ...storage, await store.read(growthCheck(config)), ...(await store.read(webhookChecks()))]);
  report(r, await outboundChecks(config, resolver));
  report(r, await outboundTlsChecks(config, store, Date.now()));
  if (store.dialect === 'postgres') {
    r.lines.push('', 'Nodes');
    report(r, await store.read(nodeChecks(Date.now())));
  }
  r.lines.push('', r.problems === 0 ? 'No problems found.' : `${r.problems} problem${r.problems === 1 ? '' : 's'} found.`);
  for (const line of r.lines) write(line);
  return r.problems === 0 ? 0 : 1;
}
