// The listeners ACME adds, without an ACME server: HTTPS (https_port) serves the app with the fallback
// certificate until one is issued, and keeps the Host check; with acme_http_port = http_port the API's own
// listener answers challenges; an unreachable ACME server is a recorded error naming the reason, not a crash.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { freePort, request, startTestApp } from '../testkit/app.ts';

function httpsGet(port: number, host: string): Promise<{ status: number; subject: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/healthz', headers: { host }, servername: 'mx.mailwright.test', rejectUnauthorized: false, agent: false }, (res) => {
      const subject = String((res.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, subject }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('https_port serves the app with the self-signed certificate when ACME is off; no challenge listener', async () => {
  const t = await startTestApp({ env: { MAILWRIGHT_HTTPS_PORT: String(await freePort()) } });
  try {
    assert.is(t.running.acmeHttp, null);
    assert.is(t.running.acme, null);
    const ok = await httpsGet(t.running.https!.port, 'localhost');
    assert.equal(ok, { status: 200, subject: 'mx.mailwright.test' });
    assert.is((await httpsGet(t.running.https!.port, 'evil.test')).status, 421);
  } finally {
    await t.stop();
  }
});

test('acme_http_port = http_port: the API listener answers challenges; an unreachable ACME server is recorded', async () => {
  const port = await freePort();
  const t = await startTestApp({
    env: { MAILWRIGHT_HTTP_PORT: String(port), MAILWRIGHT_ACME: 'true', MAILWRIGHT_ACME_HTTP_PORT: String(port), MAILWRIGHT_ACME_DIRECTORY: 'https://127.0.0.1:1/dir' },
  });
  try {
    assert.is(t.running.acmeHttp, null, 'no second listener on the same port');
    const challenge = await request(`${t.url}/.well-known/acme-challenge/unknown-token`);
    assert.is(challenge.status, 404);
    assert.is(challenge.body, 'no such challenge\n');
    assert.is((await request(`${t.url}/healthz`)).status, 200, 'the API is still served there');
    await t.running.acme!.renewDue();
    const s = t.running.acme!.currentStatus()['mx.mailwright.test'];
    assert.match(s.lastError!.message, /cannot reach the ACME server at https:\/\/127\.0\.0\.1:1\/dir: connect ECONNREFUSED/);
    assert.is(s.certificate, null);
    assert.is(t.running.acme!.forHostname(), null, 'STARTTLS keeps the fallback certificate');
  } finally {
    await t.stop();
  }
});

test.run();
