import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ConfigError, KEYS, envName, loadConfig } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'mw-config-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const empty = file('empty.toml', '');

const failsWith = (env: Record<string, string>, ...fragments: string[]) => {
  try {
    loadConfig(env);
  } catch (err) {
    assert.instance(err, ConfigError);
    for (const f of fragments) assert.ok((err as Error).message.includes(f), `"${(err as Error).message}" should mention ${f}`);
    return;
  }
  assert.unreachable(`config ${JSON.stringify(env)} should have been refused`);
};

test('defaults are the documented ones', () => {
  const c = loadConfig({ MAILWRIGHT_CONFIG: empty });
  assert.is(c.httpHost, '127.0.0.1');
  assert.is(c.httpPort, 8080);
  assert.is(c.smtpHost, '0.0.0.0');
  assert.is(c.smtpPort, 25);
  assert.is(c.submissionPort, 587);
  assert.is(c.mtaPort, 25);
  assert.is(c.publicUrl, 'http://localhost:8080');
  assert.is(c.maxMessageBytes, 26214400);
  assert.is(c.rateLimit, 100);
  assert.is(c.allowPrivateFetch, false);
  assert.is(c.allowPrivateDelivery, false);
  assert.is(c.relayUrl, null);
  assert.ok(c.dataDir.endsWith('/data'));
  assert.ok(c.dnsServers.length > 0);
  assert.is(c.trashDays, 30, 'the Trash empties itself after 30 days');
  assert.is(loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_TRASH_DAYS: '0' }).trashDays, 0, '0: kept until emptied');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_TRASH_DAYS: '-1' }, 'trash_days', 'MAILWRIGHT_TRASH_DAYS');
});

test('every key is read from the file and overridden by its variable', () => {
  const toml = file('full.toml', 'http_port = 9000\nsmtp_port = 2525\ndns_servers = ["127.0.0.1:5353", "::1"]\nallow_private_delivery = true\npublic_url = "https://mail.example.com/"\n');
  const c = loadConfig({ MAILWRIGHT_CONFIG: toml, MAILWRIGHT_SMTP_PORT: '2626' });
  assert.is(c.httpPort, 9000);
  assert.is(c.smtpPort, 2626);
  assert.equal(c.dnsServers, ['127.0.0.1:5353', '::1']);
  assert.is(c.allowPrivateDelivery, true);
  assert.is(c.publicUrl, 'https://mail.example.com');
  assert.equal(loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNS_SERVERS: '10.0.0.1, 10.0.0.2:53' }).dnsServers, ['10.0.0.1', '10.0.0.2:53']);
});

test('submission_port and public_url follow the listeners they go with when they are not set', () => {
  const at = (env: Record<string, string>) => loadConfig({ MAILWRIGHT_CONFIG: empty, ...env });
  // An ordinary user moves SMTP above 1023 (the README's quick start): submission cannot stay on 587.
  assert.is(at({ MAILWRIGHT_SMTP_PORT: '2525' }).submissionPort, 1587);
  assert.is(at({ MAILWRIGHT_SMTP_PORT: '1024' }).submissionPort, 1587);
  assert.is(at({ MAILWRIGHT_SMTP_PORT: '1023' }).submissionPort, 587);
  assert.is(at({ MAILWRIGHT_SMTP_PORT: '2525', MAILWRIGHT_SUBMISSION_PORT: '587' }).submissionPort, 587, 'a value set is kept');
  assert.is(at({ MAILWRIGHT_SMTP_PORT: '2525', MAILWRIGHT_SUBMISSION_PORT: '0' }).submissionPort, 0, 'off stays off');
  assert.is(loadConfig({ MAILWRIGHT_CONFIG: file('smtp.toml', 'smtp_port = 2600\n') }).submissionPort, 1587, 'from the file too');

  assert.is(at({ MAILWRIGHT_HTTP_PORT: '8081' }).publicUrl, 'http://localhost:8081');
  assert.is(at({ MAILWRIGHT_HTTP_HOST: '0.0.0.0', MAILWRIGHT_HTTP_PORT: '9000' }).publicUrl, 'http://localhost:9000');
  assert.is(at({ MAILWRIGHT_HTTP_HOST: '::1' }).publicUrl, 'http://localhost:8080');
  assert.is(at({ MAILWRIGHT_HTTP_HOST: '192.168.1.20', MAILWRIGHT_HTTP_PORT: '80' }).publicUrl, 'http://192.168.1.20');
  assert.is(at({ MAILWRIGHT_HTTP_HOST: 'fd00::20' }).publicUrl, 'http://[fd00::20]:8080');
  assert.is(at({ MAILWRIGHT_HTTP_PORT: '8081', MAILWRIGHT_PUBLIC_URL: 'https://mail.example.com' }).publicUrl, 'https://mail.example.com', 'a value set is kept');
  // Port 0 is "any free port": no link can name it before the box listens.
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_HTTP_PORT: '0' }, 'public_url (MAILWRIGHT_PUBLIC_URL) must be set when http_port is 0');
  assert.is(at({ MAILWRIGHT_HTTP_PORT: '0', MAILWRIGHT_PUBLIC_URL: 'http://localhost:8080' }).publicUrl, 'http://localhost:8080');
});

test('a bad value stops start-up with a message naming the key and its variable', () => {
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_HTTP_PORT: 'eighty' }, 'http_port', 'MAILWRIGHT_HTTP_PORT', '"eighty"');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_SMTP_PORT: '70000' }, 'smtp_port', 'MAILWRIGHT_SMTP_PORT');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_PUBLIC_URL: 'ftp://x' }, 'public_url');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNS_SERVERS: 'resolver.example' }, 'dns_servers', 'resolver.example');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_ALLOW_PRIVATE_FETCH: 'maybe' }, 'allow_private_fetch');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_HOSTNAME: 'bad_host!' }, 'hostname');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY_URL: 'http://relay' }, 'relay_url');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_TLS_CERT: '/nonexistent.pem' }, 'tls_cert', '/nonexistent.pem');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_MAX_MESSAGE_BYTES: '-1' }, 'max_message_bytes');
  failsWith({ MAILWRIGHT_CONFIG: file('bad.toml', 'rate_limit = "lots"\n') }, 'rate_limit', 'bad.toml');
});

test('unknown keys, unknown variables, broken TOML and a missing file are refused', () => {
  failsWith({ MAILWRIGHT_CONFIG: file('typo.toml', 'htp_port = 1\n') }, 'htp_port');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_SMTP_PROT: '25' }, 'MAILWRIGHT_SMTP_PROT');
  failsWith({ MAILWRIGHT_CONFIG: file('broken.toml', 'http_port = = 3\n') }, 'not valid TOML');
  failsWith({ MAILWRIGHT_CONFIG: join(dir, 'missing.toml') }, 'does not exist');
});

test('blocklists and rspamd: defaults, lists with a per-zone action, and refusals naming the key', () => {
  const d = loadConfig({ MAILWRIGHT_CONFIG: empty });
  assert.equal([d.dnsbl, d.dnsblAction, d.uribl, d.dnsblTimeout], [[], 'refuse', [], 1500]);
  assert.equal([d.spamFilter, d.rspamdUrl, d.rspamdControllerUrl, d.rspamdPassword], ['builtin', 'http://127.0.0.1:11333', 'http://127.0.0.1:11334', null]);
  const env = loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNSBL: 'zen.spamhaus.org, BL.Example.net.=score ,x.example=refuse', MAILWRIGHT_DNSBL_ACTION: 'score', MAILWRIGHT_URIBL: 'dbl.spamhaus.org', MAILWRIGHT_DNSBL_TIMEOUT: '800ms' });
  assert.equal(env.dnsbl, [{ zone: 'zen.spamhaus.org', action: 'score' }, { zone: 'bl.example.net', action: 'score' }, { zone: 'x.example', action: 'refuse' }], 'a zone without =action takes dnsbl_action');
  assert.equal([env.uribl, env.dnsblTimeout], [['dbl.spamhaus.org'], 800]);
  const toml = file('blocklists.toml', 'dnsbl = ["zen.spamhaus.org", "bl.example.net=score"]\nspam_filter = "rspamd"\nrspamd_password = "q1"\n');
  const t = loadConfig({ MAILWRIGHT_CONFIG: toml });
  assert.equal(t.dnsbl, [{ zone: 'zen.spamhaus.org', action: 'refuse' }, { zone: 'bl.example.net', action: 'score' }]);
  assert.equal([t.spamFilter, t.rspamdPassword], ['rspamd', 'q1']);
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNSBL: 'zen.spamhaus.org=block' }, 'dnsbl', 'MAILWRIGHT_DNSBL', '=refuse or =score');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNSBL: 'zen.spamhaus.org,ZEN.spamhaus.org' }, 'dnsbl', 'lists a zone twice');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_URIBL: 'not a zone' }, 'uribl', 'host name');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DNSBL_ACTION: 'reject' }, 'dnsbl_action', 'must be refuse or score');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_SPAM_FILTER: 'spamassassin' }, 'spam_filter', 'must be builtin, rspamd or off');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RSPAMD_URL: 'tcp://127.0.0.1:11333' }, 'rspamd_url', 'http: or https:');
});

test('outbound TLS: tls_ca_file must be readable; mta_sts_port other than 443 needs allow_private_delivery', () => {
  const d = loadConfig({ MAILWRIGHT_CONFIG: empty });
  assert.equal([d.tlsCaFile, d.mtaStsPort], [null, 443]);
  const pem = file('ca.pem', '-----BEGIN CERTIFICATE-----\n');
  const lab = loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_TLS_CA_FILE: pem, MAILWRIGHT_MTA_STS_PORT: '8443', MAILWRIGHT_ALLOW_PRIVATE_DELIVERY: 'true' });
  assert.equal([lab.tlsCaFile, lab.mtaStsPort], [pem, 8443]);
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_TLS_CA_FILE: join(dir, 'missing.pem') }, 'tls_ca_file', 'MAILWRIGHT_TLS_CA_FILE', 'cannot read');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_MTA_STS_PORT: '8443' }, 'mta_sts_port', 'test knob', 'allow_private_delivery');
});

test('database_url: a PostgreSQL URL naming a database, or empty for SQLite; a refusal never shows the password', () => {
  assert.is(loadConfig({ MAILWRIGHT_CONFIG: empty }).databaseUrl, null);
  const url = 'postgres://mailwright:s3cret@db.internal:5432/mailwright';
  assert.is(loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DATABASE_URL: url }).databaseUrl, url);
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DATABASE_URL: 'mysql://mailwright:s3cret@db/mail' }, 'database_url', 'MAILWRIGHT_DATABASE_URL', 'PostgreSQL URL');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DATABASE_URL: 'postgres://mailwright:s3cret@db.internal:5432' }, 'must name the database');
  try {
    loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_DATABASE_URL: 'postgres://mailwright:s3cret@db.internal' });
  } catch (err) {
    assert.not.ok((err as Error).message.includes('s3cret'), (err as Error).message);
  }
});

test('config/mailwright.example.toml documents every key and loads once uncommented', () => {
  const example = readFileSync(new URL('../../config/mailwright.example.toml', import.meta.url), 'utf8');
  // Top-level keys, and tables ([[relay]]) by their name: what follows a table header belongs to the table.
  const [topLevel] = example.split(/^#?\s*\[\[/m);
  const tables = [...example.matchAll(/^#?\s*\[\[([a-z_]+)\]\]/gm)].map((m) => m[1]);
  const documented = [...[...topLevel.matchAll(/^#?\s*([a-z0-9_]+)\s*=/gm)].map((m) => m[1]), ...tables];
  assert.equal([...new Set(documented)].sort(), KEYS.map((k) => k.key).sort());
  for (const k of KEYS) assert.ok(example.includes(envName(k.key)), `example should name ${envName(k.key)}`);
  // Keys, and the lines that continue a multi-line array value (`#   { ... },`, `# ]`).
  const uncommented = example.replace(/^#\s?([a-z0-9_]+\s*=|\s*\{|\]|\[\[)/gm, '$1').replace(/^(tls_cert|tls_key|acme_ca_file)\s*=.*$/gm, '');
  const c = loadConfig({ MAILWRIGHT_CONFIG: file('example.toml', uncommented) });
  assert.is(c.smtpPort, 25);
  assert.equal(c.plans.map((p) => [p.key, p.limits.recipients]), [['selfhosted_transactional_monthly', null], ['pro_marketing_monthly', 50000]]);
  assert.equal(c.relays.map((r) => r.match), [[{ on: 'sender', domain: 'example.com' }], [{ on: 'recipient', domain: 'outlook.com' }, { on: 'recipient', domain: 'hotmail.com' }]]);
});

test('acme: off by default with Let\'s Encrypt production; refused beside tls_cert; https_port must be its own', () => {
  const c = loadConfig({ MAILWRIGHT_CONFIG: empty });
  assert.equal([c.acme, c.acmeDirectory, c.acmeEmail, c.acmeHttpPort, c.acmeCaFile, c.httpsPort], [false, 'https://acme-v02.api.letsencrypt.org/directory', null, 80, null, 0]);
  const cert = file('cert.pem', 'x');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_ACME: 'true', MAILWRIGHT_TLS_CERT: cert, MAILWRIGHT_TLS_KEY: cert }, 'acme = true', 'tls_cert');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_ACME_DIRECTORY: 'http://acme.example/dir' }, 'acme_directory', 'https:');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_ACME_EMAIL: 'nobody' }, 'acme_email', 'email address');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_HTTPS_PORT: '8080' }, 'https_port', 'already taken');
  const on = loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_ACME: 'yes', MAILWRIGHT_ACME_EMAIL: 'ops@example.com', MAILWRIGHT_HTTPS_PORT: '443' });
  assert.equal([on.acme, on.acmeEmail, on.httpsPort], [true, 'ops@example.com', 443]);
});

test('relays: match on sender or recipient domain or everything; an smtp: or smtps: URL; errors name the entry', () => {
  const c = loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY: JSON.stringify([{ match: '*', url: 'smtps://u:p@relay.example.net', tls_verify: false }, { match: ['sender:Example.COM.'], url: 'smtp://relay2.example.net:2525' }]) });
  assert.equal(c.relays, [
    { match: [{ on: 'any' }], url: 'smtps://u:p@relay.example.net', tlsVerify: false },
    { match: [{ on: 'sender', domain: 'example.com' }], url: 'smtp://relay2.example.net:2525', tlsVerify: true },
  ]);
  assert.equal(loadConfig({ MAILWRIGHT_CONFIG: empty }).relays, []);
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY: JSON.stringify([{ match: 'from:example.com', url: 'smtp://r.example.net' }]) }, 'MAILWRIGHT_RELAY', 'sender:<domain>');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY: JSON.stringify([{ match: '*', url: 'http://r.example.net' }]) }, 'relay', 'smtp: or smtps:');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY: JSON.stringify([{ match: '*', url: 'smtp://r.example.net', port: 25 }]) }, 'relay', 'port');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_RELAY: '[{' }, 'MAILWRIGHT_RELAY', 'JSON array');
});

test('plans: the key must name its tier, class and interval; the default plan must be a listed transactional one', () => {
  const plan = { key: 'pro_marketing_monthly', tier: 'pro', message_class: 'marketing', interval: 'monthly', price: 100, currency: 'EUR', limits: { recipients: 10, attachment_bytes: null } };
  const c = loadConfig({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_PLANS: JSON.stringify([plan, { ...plan, key: 'x_transactional_monthly', tier: 'x', message_class: 'transactional' }]), MAILWRIGHT_DEFAULT_PLAN: 'x_transactional_monthly' });
  assert.equal(c.plans[0], { key: 'pro_marketing_monthly', tier: 'pro', messageClass: 'marketing', interval: 'monthly', price: 100, currency: 'EUR', limits: { recipients: 10, attachmentBytes: null } });
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_PLANS: JSON.stringify([{ ...plan, key: 'pro_transactional_monthly' }]) }, 'plans', 'key must be');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_PLANS: JSON.stringify([plan]), MAILWRIGHT_DEFAULT_PLAN: 'pro_marketing_monthly' }, 'default_plan', 'transactional');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_PLANS: 'not json' }, 'MAILWRIGHT_PLANS');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_BILLING_PROVIDER: 'stripe' }, 'stripe_secret_key');
  failsWith({ MAILWRIGHT_CONFIG: empty, MAILWRIGHT_REPUTATION_BOUNCE_AT_RISK: '0.5', MAILWRIGHT_REPUTATION_BOUNCE_PAUSE: '0.1' }, 'reputation_bounce_at_risk');
});

test.run();
