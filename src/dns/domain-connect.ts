// Domain Connect, synchronous flow, service-provider side (Domain Connect spec v2.1 / draft-ietf-dconn-domainconnect):
// discover a zone's DNS provider, ask whether it runs our template, and build the signed consent URL a person opens.
// It must never apply DNS changes itself (the DNS provider does, after consent) nor hold any provider credentials.
import { sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Resolver } from 'node:dns/promises';
import { checkUrl, fetchJson, FetchRefused } from './safe-fetch.ts';
import type { FetchPolicy } from './safe-fetch.ts';

export interface ServiceIdentity {
  /** Our service provider id: the providerId of config/domain-connect-template.json. */
  providerId: string;
  serviceId: string;
  /** Host label under the template's syncPubKeyDomain holding our public key, e.g. '_dck1'. */
  keyHost: string;
  privateKey: KeyObject;
}

/** The settings document a DNS provider serves for a zone (spec section "DNS Provider Discovery"), validated. */
export interface Settings {
  providerId: string;
  providerName: string;
  providerDisplayName: string;
  /** https, no userinfo: a browser is sent here. */
  urlSyncUX: string;
  /** https, no userinfo: we fetch from here, through the SSRF rules. */
  urlAPI: string;
  /** Kept only when it passes the same URL rules as urlSyncUX; we do not use the async flow. */
  urlAsyncUX: string | null;
  /** Kept only when it passes the browser URL rules; may contain %domain%. */
  urlControlPanel: string | null;
  width: number;
  height: number;
  nameServers: string[];
}

export type DomainConnectErrorCode = 'bad_request' | 'bad_settings' | 'provider_error' | 'dns_error' | 'bad_key';

/** The provider answered something the protocol does not allow, a lookup failed, or we were asked for nonsense. */
export class DomainConnectError extends Error {
  readonly code: DomainConnectErrorCode;

  constructor(code: DomainConnectErrorCode, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'DomainConnectError';
    this.code = code;
  }
}

/** The variables config/domain-connect-template.json uses, besides the built-in %host%/%domain%/%fqdn%. */
export const TEMPLATE_VARIABLES = ['dkimselector', 'dkimkey', 'mailhost'] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];

const DEFAULT_WINDOW = 750; // spec: default width and height of the consent popup
const MAX_URL = 2048;
// Parameters the apply URL itself defines (spec "Apply Template"); a template variable may not shadow one.
const RESERVED_PARAMS = new Set(['domain', 'host', 'redirect_uri', 'state', 'sig', 'key', 'groupid', 'providername', 'serviceid', 'providerid', 'force']);
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

// --- Discovery ----------------------------------------------------------------------------------------------

/**
 * Spec "DNS Provider Discovery": TXT _domainconnect.<zone> names the provider's endpoint; its settings say where
 * the consent UX and the API live. Null when the zone has no such record, or the provider has no settings for it
 * (the spec warns that a TXT record may exist without Domain Connect being enabled).
 */
export async function discoverSettings(zone: string, opts: { resolver: Resolver; fetch: FetchPolicy }): Promise<Settings | null> {
  const name = checkZone(zone);
  let records: string[][];
  try {
    records = await opts.resolver.resolveTxt(`_domainconnect.${name}`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENODATA' || code === 'ENOTFOUND') return null;
    throw new DomainConnectError('dns_error', `looking up _domainconnect.${name} failed (${code ?? String(err)})`, err);
  }
  const endpoint = records.map((chunks) => chunks.join('').trim()).find((value) => value !== '');
  if (!endpoint) return null;

  const { status, body } = await fetchJson(settingsUrl(endpoint, name), opts.fetch);
  if (status === 404) return null;
  if (status < 200 || status >= 300) {
    throw new DomainConnectError('provider_error', `Domain Connect settings for ${name} at ${endpoint}: HTTP ${status}`);
  }
  return parseSettings(body, { allowPrivate: opts.fetch.allowPrivate });
}

function settingsUrl(endpoint: string, zone: string): string {
  // The record holds a host and optional path prefix; tolerate an explicit https:// but no other scheme.
  const raw = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint) ? endpoint : `https://${endpoint}`;
  const base = checkUrl(raw, { allowPrivate: true }).url;
  return `https://${base.host}${trimSlash(base.pathname)}/v2/${zone}/settings`;
}

/**
 * Validates a settings document. Catalogue API-10b: urlSyncUX is where a browser is sent and urlAPI where we
 * fetch from, so both must be https without userinfo, and an IP-literal host must be public (unless lab mode);
 * javascript:, data: and http: are refused with FetchRefused.
 */
export function parseSettings(body: unknown, opts: { allowPrivate: boolean }): Settings {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DomainConnectError('bad_settings', 'Domain Connect settings are not a JSON object');
  }
  const doc = body as Record<string, unknown>;
  const text = (field: string, required: boolean): string | null => {
    const value = doc[field];
    if (typeof value === 'string' && value.trim() !== '' && value.length <= 255) return value.trim();
    if (required) throw new DomainConnectError('bad_settings', `Domain Connect settings: ${field} must be a non-empty string`);
    return null;
  };
  const providerId = text('providerId', true)!;
  const providerName = text('providerName', true)!;
  if (doc.urlSyncUX === undefined) {
    throw new DomainConnectError('bad_settings', `Domain Connect settings: ${providerName} offers no synchronous flow (no urlSyncUX)`);
  }
  return {
    providerId,
    providerName,
    providerDisplayName: text('providerDisplayName', false) ?? providerName,
    urlSyncUX: safeUrl(doc.urlSyncUX, 'urlSyncUX', opts),
    urlAPI: safeUrl(doc.urlAPI, 'urlAPI', opts),
    urlAsyncUX: optionalUrl(doc.urlAsyncUX, 'urlAsyncUX', opts),
    urlControlPanel: optionalUrl(doc.urlControlPanel, 'urlControlPanel', opts),
    width: windowSize(doc.width),
    height: windowSize(doc.height),
    nameServers: Array.isArray(doc.nameServers) ? doc.nameServers.filter((n): n is string => typeof n === 'string') : [],
  };
}

function safeUrl(value: unknown, field: string, opts: { allowPrivate: boolean }): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new DomainConnectError('bad_settings', `Domain Connect settings: ${field} must be a URL`);
  }
  if (value.length > MAX_URL) throw new DomainConnectError('bad_settings', `Domain Connect settings: ${field} is longer than ${MAX_URL} characters`);
  let url: URL;
  try {
    url = checkUrl(value.trim(), opts).url;
  } catch (err) {
    if (err instanceof FetchRefused) throw new FetchRefused(err.reason, err.url, `Domain Connect settings: ${field} ${err.message}`);
    throw err;
  }
  // Paths are appended to these prefixes; a query or fragment would end up in the middle of them.
  if (url.search || url.hash) throw new DomainConnectError('bad_settings', `Domain Connect settings: ${field} must not carry a query or fragment`);
  return `${url.origin}${trimSlash(url.pathname)}`;
}

function optionalUrl(value: unknown, field: string, opts: { allowPrivate: boolean }): string | null {
  if (value === undefined || value === null || value === '') return null;
  try {
    return safeUrl(value, field, opts);
  } catch {
    // We never use these for the connect flow; a bad one is dropped rather than failing discovery.
    return null;
  }
}

function windowSize(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= 10_000 ? value : DEFAULT_WINDOW;
}

// --- Template support ---------------------------------------------------------------------------------------

/** Spec "Query Supported Template": 2xx means the provider runs our template (body optional), 404 means not. */
export async function supportsTemplate(settings: Settings, identity: ServiceIdentity, fetch: FetchPolicy): Promise<boolean> {
  const url = `${trimSlash(settings.urlAPI)}/v2/domainTemplates/providers/${strict(identity.providerId)}/services/${strict(identity.serviceId)}`;
  const { status } = await fetchJson(url, fetch);
  if (status >= 200 && status < 300) return true;
  if (status === 404) return false;
  throw new DomainConnectError('provider_error', `${settings.providerName}: template query answered HTTP ${status}`);
}

// --- Consent URL --------------------------------------------------------------------------------------------

export interface ConsentRequest {
  zone: string;
  /** Relative to the zone; '' (or the zone itself) applies the template at the apex. */
  host: string;
  variables: Record<string, string>;
  /** Template groups to apply (spec: groupId, comma-separated); omitted means all of them. */
  groupIds?: string[];
  redirectUri: string;
  state?: string;
}

/**
 * Spec "Apply Template" + "Digitally Sign Requests": the apply URL with our query string, then sig (RSA-SHA256
 * over exactly that query string, base64, URL-encoded) and key (where the public key lives under the template's
 * syncPubKeyDomain). Because it is signed, the provider accepts any redirect_uri, so callers must only pass
 * URLs of this box.
 */
export function consentUrl(settings: Settings, identity: ServiceIdentity, req: ConsentRequest): string {
  const zone = checkZone(req.zone);
  const host = relativeHost(req.host, zone);
  const redirect = checkRedirect(req.redirectUri);
  const params: Array<[string, string]> = [['domain', zone]];
  if (host) params.push(['host', host]);
  if (req.groupIds !== undefined) {
    if (req.groupIds.length === 0 || !req.groupIds.every((id) => /^[A-Za-z0-9_-]{1,64}$/.test(id))) {
      throw new DomainConnectError('bad_request', 'groupIds must be a non-empty list of group names');
    }
    params.push(['groupId', req.groupIds.join(',')]);
  }
  for (const name of Object.keys(req.variables).sort()) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name) || RESERVED_PARAMS.has(name.toLowerCase())) {
      throw new DomainConnectError('bad_request', `template variable name ${JSON.stringify(name)} is not allowed`);
    }
    const value = req.variables[name];
    if (typeof value !== 'string') throw new DomainConnectError('bad_request', `template variable ${name} must be a string`);
    params.push([name, value]);
  }
  params.push(['redirect_uri', redirect]);
  if (req.state !== undefined) params.push(['state', req.state]);
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(identity.keyHost)) {
    throw new DomainConnectError('bad_request', `key host ${JSON.stringify(identity.keyHost)} is not a DNS name`);
  }

  const query = params.map(([name, value]) => `${strict(name)}=${strict(value)}`).join('&');
  const signature = sign('sha256', Buffer.from(query, 'utf8'), identity.privateKey).toString('base64');
  const base = `${trimSlash(settings.urlSyncUX)}/v2/domainTemplates/providers/${strict(identity.providerId)}/services/${strict(identity.serviceId)}/apply`;
  return `${base}?${query}&sig=${strict(signature)}&key=${strict(identity.keyHost)}`;
}

// --- Template variables -------------------------------------------------------------------------------------

/**
 * The variables for config/domain-connect-template.json, checked so each stays as narrow as the spec's
 * "Template Record" advice asks: a selector label, base64 key data, a host name.
 */
export function templateVariables(input: { dkimSelector: string; dkimPublicKey: string; mailHost: string }): Record<TemplateVariable, string> {
  const selector = input.dkimSelector.toLowerCase();
  if (!LABEL.test(selector)) throw new DomainConnectError('bad_request', `DKIM selector ${JSON.stringify(input.dkimSelector)} is not a DNS label`);
  const key = input.dkimPublicKey.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) throw new DomainConnectError('bad_request', 'DKIM public key must be base64 (the p= value)');
  const mailHost = input.mailHost.toLowerCase().replace(/\.$/, '');
  if (!isHostName(mailHost)) throw new DomainConnectError('bad_request', `mail host ${JSON.stringify(input.mailHost)} is not a host name`);
  return { dkimselector: selector, dkimkey: key, mailhost: mailHost };
}

// --- Helpers ------------------------------------------------------------------------------------------------

function checkZone(zone: string): string {
  const name = zone.trim().toLowerCase().replace(/\.$/, '');
  if (!isHostName(name) || !name.includes('.')) throw new DomainConnectError('bad_request', `${JSON.stringify(zone)} is not a domain name`);
  return name;
}

function isHostName(name: string): boolean {
  return name.length <= 253 && name.split('.').every((label) => LABEL.test(label));
}

function relativeHost(host: string, zone: string): string {
  let name = host.trim().toLowerCase().replace(/\.$/, '');
  if (name === '@' || name === zone) return '';
  if (name.endsWith(`.${zone}`)) name = name.slice(0, -zone.length - 1);
  if (name && !name.split('.').every((label) => /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label))) {
    throw new DomainConnectError('bad_request', `host ${JSON.stringify(host)} is not a DNS name relative to ${zone}`);
  }
  return name;
}

function checkRedirect(uri: string): string {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new DomainConnectError('bad_request', 'redirect_uri is not a URL');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) {
    throw new DomainConnectError('bad_request', 'redirect_uri must be an http(s) URL without user info');
  }
  return url.href;
}

/**
 * RFC 3986 encoding of a query component. encodeURIComponent leaves !'()* alone, and a browser re-encodes '
 * in a query (WHATWG URL), which would change the bytes the provider verifies.
 */
function strict(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
