// The certificate the box's TLS listeners present: the hostname's ACME certificate when acme = true and one was
// issued, else what smtp/certificate.ts gives (the operator's files or the self-signed one). It swaps a new one
// into STARTTLS (MX and submission) and HTTPS without a restart: sessions already in TLS keep theirs, the next
// handshake gets the new one. HTTPS picks an mta-sts.<domain> certificate by the client's server name.
import type { Server as HttpsServer } from 'node:https';
import type { SecureContext } from 'node:tls';
import type { SMTPServer } from 'smtp-server';
import type { App } from '../context.ts';
import { tlsCredentials, type TlsCredentials } from '../smtp/certificate.ts';
import { AcmeCertificates } from '../acme/certificates.ts';
import { allDomains } from '../domains/domains.ts';
import type { TlsState } from '../account/overview.ts';

export type ServedTls = Awaited<ReturnType<typeof createServedTls>>;

export async function createServedTls(app: App) {
  const { config, log } = app;
  let fallback = await tlsCredentials(config);
  if (fallback.notSaved) log.warn('could not keep the new self-signed TLS certificate; STARTTLS uses it from memory and the next start makes another', fallback.notSaved);
  const acme = config.acme
    ? new AcmeCertificates({
        store: app.store,
        node: app.node,
        account: { directoryUrl: config.acmeDirectory, email: config.acmeEmail, caFile: config.acmeCaFile },
        dataDir: config.dataDir,
        hostname: config.hostname,
        policyDomains: async () => (await app.store.read(allDomains())).filter((d) => d.inbound_status === 'ready' && !d.local).map((d) => d.name),
        resolver: app.dns,
        clock: app.clock,
        log,
      })
    : null;
  await acme?.load();
  const smtp: SMTPServer[] = [];
  let https: HttpsServer | null = null;

  const current = (): TlsCredentials => {
    const issued = acme?.forHostname();
    return issued ? { key: issued.key, cert: issued.cert, selfSigned: false } : fallback;
  };
  const apply = () => {
    const { key, cert } = current();
    for (const server of smtp) server.updateSecureContext({ key, cert });
    https?.setSecureContext({ key, cert, minVersion: 'TLSv1.2' });
  };
  acme?.onChange(() => {
    apply();
    log.info('the TLS listeners use the renewed certificate', { names: acme.names() });
  });

  return {
    acme,
    current,
    /** What HTTPS answers a server name (SNI) with: its own certificate if the box holds one, else the default. */
    sni: (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) => cb(null, acme?.contextFor(servername) ?? undefined),
    /** Where the certificate in use comes from, and ACME's last error for the hostname (GET /account). */
    state: (): TlsState => {
      const hostname = acme?.currentStatus()[config.hostname];
      return {
        source: acme?.forHostname() ? 'acme' : config.tlsCert ? 'files' : 'self-signed',
        acme: acme ? { lastError: hostname?.lastError?.message ?? null, lastErrorAt: hostname?.lastError?.at ?? null, retryAt: hostname?.retryAt ?? null } : null,
      };
    },
    /** Names the box holds a certificate for: the HTTP app answers to them too. */
    serves: (host: string) => acme?.names().includes(host) ?? false,
    /** The listeners to keep up to date. */
    attach(servers: { smtp: Array<SMTPServer | null>; https: HttpsServer | null }) {
      smtp.push(...servers.smtp.filter((s): s is SMTPServer => s !== null));
      https = servers.https;
    },
    /** SIGHUP: the operator's files (or the self-signed one) read again; an ACME certificate stays first. */
    async reload(next: Parameters<typeof tlsCredentials>[0]) {
      fallback = await tlsCredentials(next);
      apply();
      return current();
    },
  };
}
