// One certificate ordered from the ACME server with acme-client (RFC 8555 7.4): the account (its key made once
// and kept in the store), a fresh key and CSR for the name, the HTTP-01 challenge answered by `Challenges`, the
// chain back.
// Only this file talks to acme-client; the schedule, storage and serving live beside it. It is loaded on the first
// order: with its axios and forge it costs every start about 0.3 s and several MiB, and most boxes order rarely
// or never.
import { readFileSync } from 'node:fs';
import { Agent, get } from 'node:https';
import { rootCertificates } from 'node:tls';
import type AcmeClient from 'acme-client';
import type { Challenges } from './challenge.ts';

type Acme = typeof AcmeClient;

export interface AcmeAccount {
  directoryUrl: string;
  email: string | null;
  /** An extra CA (PEM file) to trust for the ACME server's own HTTPS, beside the system's. */
  caFile: string | null;
  /** The box's account key (PEM), made with `make` the first time: one account for all nodes. */
  key: (make: () => Buffer) => Promise<Buffer>;
}

let trusting: string | null = null;
let agent: Agent | undefined;

// acme-client sends every request through one axios instance of its own. Its retries (5, up to 75 s) would hold
// a failing renewal long after the server is known to be down; the box's backoff (policy.ts) retries instead.
function configureTransport(acme: Acme, caFile: string | null): void {
  acme.axios.defaults.timeout = 30_000;
  (acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number; retryDefaultDelay: number } }).acmeSettings.retryMaxAttempts = 2;
  (acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number; retryDefaultDelay: number } }).acmeSettings.retryDefaultDelay = 1;
  if (caFile === trusting) return;
  trusting = caFile;
  // `ca` replaces Node's roots, so they are named too: a private CA is trusted beside the public ones.
  agent = caFile ? new Agent({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')] }) : undefined;
  acme.axios.defaults.httpsAgent = agent;
}

/**
 * The directory, fetched first: acme-client 5.4 turns a network error into "Cannot read properties of undefined
 * (reading 'config')" once its retries are spent, and the operator needs the real reason (refused, timed out,
 * certificate not trusted) in doctor.
 */
function reach(directoryUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = get(directoryUrl, { agent, timeout: 30_000 }, (res) => {
      res.resume();
      if (res.statusCode === 200) resolve();
      else reject(new Error(`the ACME directory ${directoryUrl} answered HTTP ${res.statusCode}`));
    });
    req.on('timeout', () => req.destroy(new Error('timed out after 30 s')));
    req.on('error', (err) => reject(new Error(`cannot reach the ACME server at ${directoryUrl}: ${err.message}`)));
  });
}

/**
 * Orders a certificate for `name` (RFC 8555 7.3-7.4): account, order, each authorization's http-01 challenge,
 * finalize with a CSR, download the chain. Resolves with its key and chain (PEM), or rejects with the reason.
 */
export async function order(account: AcmeAccount, name: string, challenges: Challenges): Promise<{ key: Buffer; cert: Buffer }> {
  const { default: acme } = await import('acme-client');
  configureTransport(acme, account.caFile);
  await reach(account.directoryUrl);
  const made = await acme.crypto.createPrivateEcdsaKey('P-256');
  const client = new acme.Client({ directoryUrl: account.directoryUrl, accountKey: await account.key(() => made) });
  // The contact is always named, none being []: acme-client turns an existing account's creation into an update
  // of what is given, and an update of the terms alone is refused (Pebble: "Use POST-as-GET ..."), which failed
  // every order after the first on a box without acme_email.
  await client.createAccount({ termsOfServiceAgreed: true, contact: account.email ? [`mailto:${account.email}`] : [] });
  const placed = await client.createOrder({ identifiers: [{ type: 'dns', value: name }] });
  for (const authz of await client.getAuthorizations(placed)) {
    if (authz.status === 'valid') continue;
    const challenge = authz.challenges.find((c) => c.type === 'http-01');
    if (!challenge) throw new Error(`the ACME server offered no http-01 challenge for ${authz.identifier.value} (offered: ${authz.challenges.map((c) => c.type).join(', ')})`);
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    await challenges.set(challenge.token, keyAuthorization);
    try {
      await client.completeChallenge(challenge);
      await client.waitForValidStatus(challenge);
    } finally {
      await challenges.delete(challenge.token).catch(() => {});
    }
  }
  // RSA 2048: every SMTP client that speaks TLS at all can use it, which is not yet true of ECDSA.
  // The CSR is made with acme-client's forge helper: its @peculiar/x509 one depends on one copy of
  // @peculiar/asn1-schema being installed, and an install with two fails with "Cannot get schema".
  const [key, csr] = await acme.forge.createCsr({ commonName: name, altNames: [name] }, await acme.crypto.createPrivateRsaKey(2048));
  const finalized = await client.waitForValidStatus(await client.finalizeOrder(placed, csr));
  const cert = await client.getCertificate(finalized);
  return { key: Buffer.from(key), cert: Buffer.from(cert) };
}
