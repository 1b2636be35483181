// The rules between keys, checked once every key is read and defaulted: a setting that makes no sense beside
// another stops start-up with a message naming both.
import type { Config } from './settings.ts';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Throws a ConfigError for the first rule `config` breaks. */
export function checkRules(result: Config): void {
  const fallback = result.plans.find((p) => p.key === result.defaultPlan);
  if (!fallback || fallback.messageClass !== 'transactional') {
    throw new ConfigError(`config: default_plan (MAILWRIGHT_DEFAULT_PLAN) "${result.defaultPlan}" must be a transactional plan listed in plans`);
  }
  if (result.billingProvider === 'stripe' && (!result.stripeSecretKey || !result.stripeWebhookSecret)) {
    throw new ConfigError('config: billing_provider "stripe" needs stripe_secret_key (MAILWRIGHT_STRIPE_SECRET_KEY) and stripe_webhook_secret (MAILWRIGHT_STRIPE_WEBHOOK_SECRET)');
  }
  for (const [atRisk, pause, what] of [[result.reputationBounceAtRisk, result.reputationBouncePause, 'bounce'], [result.reputationComplaintAtRisk, result.reputationComplaintPause, 'complaint']] as const) {
    if (atRisk >= pause) throw new ConfigError(`config: reputation_${what}_at_risk must be below reputation_${what}_pause`);
  }
  if (result.smtpReservedClients >= result.smtpMaxClients) {
    throw new ConfigError('config: smtp_reserved_clients (MAILWRIGHT_SMTP_RESERVED_CLIENTS) must be below smtp_max_clients (MAILWRIGHT_SMTP_MAX_CLIENTS)');
  }
  const proxied = (['smtp', 'submission', 'http'] as const).find((l) => result[`${l}ProxyProtocol`]);
  if (proxied && !result.trustedProxies.length) throw new ConfigError(`config: ${proxied}_proxy_protocol needs trusted_proxies (MAILWRIGHT_TRUSTED_PROXIES): the load balancers whose PROXY headers are believed`);
  if ((result.tlsCert === null) !== (result.tlsKey === null)) {
    throw new ConfigError('config: tls_cert (MAILWRIGHT_TLS_CERT) and tls_key (MAILWRIGHT_TLS_KEY) must be set together');
  }
  if (result.acme && result.tlsCert) {
    throw new ConfigError('config: acme = true (MAILWRIGHT_ACME) and tls_cert (MAILWRIGHT_TLS_CERT) cannot both be set: either the box gets its certificate by ACME, or it uses your files; remove one');
  }
  if (result.httpsPort !== 0 && [result.httpPort, result.acmeHttpPort, result.smtpPort, result.submissionPort].includes(result.httpsPort)) {
    throw new ConfigError(`config: https_port (MAILWRIGHT_HTTPS_PORT) ${result.httpsPort} is already taken by http_port, acme_http_port, smtp_port or submission_port; pick another (443 is usual)`);
  }
  // RFC 8461 3.3 fetches policies on 443 only; another port is for tests and labs, which allow private delivery.
  if (result.mtaStsPort !== 443 && !result.allowPrivateDelivery) {
    throw new ConfigError('config: mta_sts_port (MAILWRIGHT_MTA_STS_PORT) other than 443 is a test knob: it needs allow_private_delivery');
  }
}
