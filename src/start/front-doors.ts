// The box's front doors: the HTTP app with every resource's routes and pages, the SMTP MX and submission
// listeners with their TLS certificate, the live event stream, the HTTPS listener and the
// ACME challenge listener. startApp builds them, then opens them in order (SMTP, submission, ACME challenges,
// HTTP, HTTPS) once the background work runs; a port that cannot be had is a StartupError.
import type { AddressInfo, Server } from 'node:net';
import type { App } from '../context.ts';
import type { Config } from '../config/config.ts';
import { StartupError } from '../errors.ts';
import { createHttpApp, createHttpServer, createHttpsServer } from '../http/server.ts';
import { RateLimiter } from '../http/rate-limit.ts';
import { SharedRates } from '../cluster/shared-rates.ts';
import type { Authenticator } from '../http/auth.ts';
import { createMxServer } from '../smtp/mx.ts';
import { Door } from '../smtp/door.ts';
import { createSubmissionServer } from '../smtp/submission.ts';
import { createChallengeServer } from '../acme/challenge.ts';
import { createServedTls } from './certificates.ts';
import { accountRoutes } from '../account/routes.ts';
import { boxRoutes } from '../account/box-routes.ts';
import { auditRoutes } from '../account/audit-routes.ts';
import { findKeyBySecret } from '../account/keys.ts';
import { findSession } from '../account/sessions.ts';
import { value } from '../db/query.ts';
import { attachmentVisible, emailVisible } from '../emails/scope.ts';
import type { Visible } from '../http/scopes.ts';
import { LoginThrottle } from '../account/login-throttle.ts';
import { domainRoutes, mtaStsPages } from '../domains/routes.ts';
import { emailRoutes } from '../emails/routes.ts';
import { replyRoutes } from '../emails/reply-routes.ts';
import { emailListRoutes } from '../emails/search-routes.ts';
import { analyticsRoutes } from '../emails/analytics-routes.ts';
import { labelRoutes } from '../labels/routes.ts';
import { draftRoutes } from '../drafts/routes.ts';
import { webhookRoutes } from '../webhooks/routes.ts';
import { EventStream } from '../webhooks/stream.ts';
import { dashboardPages } from '../dashboard/routes.ts';
import { templateRoutes } from '../templates/routes.ts';
import { forwardingPages, inboxRoutes } from '../inboxes/routes.ts';
import { linkPages } from '../feedback/link-routes.ts';
import { suppressionRoutes } from '../feedback/routes.ts';
import { reportRoutes } from '../feedback/report-routes.ts';
import { spamRoutes } from '../filter/routes.ts';
import { billingRoutes } from '../billing/routes.ts';
import { billingPages } from '../billing/page-routes.ts';
import { metricsPage } from '../metrics/routes.ts';
import { mcpRoutes } from '../mcp/routes.ts';
import { acceptProxyProtocol } from './proxy-protocol.ts';
import { inRanges } from '../dns/ip-ranges.ts';
import type Koa from 'koa';
import type { Background, Close } from './background.ts';

const MiB = 1024 * 1024;

export type FrontDoors = Awaited<ReturnType<typeof createFrontDoors>>;

/** Where the box listens; `submission` null when MAILWRIGHT_SUBMISSION_PORT is 0 (off), `https` when https_port is. */
export interface Listening {
  smtp: AddressInfo;
  submission: AddressInfo | null;
  http: AddressInfo;
  https: AddressInfo | null;
  /** The HTTP-01 challenge listener (acme = true, acme_http_port not 0 and not http_port). */
  acmeHttp: AddressInfo | null;
}

/** Builds the front doors, listening on nothing yet. `healthy`: what /healthz answers, besides the store's health. */
export async function createFrontDoors(app: App, work: Background, opts: { tryMode: boolean; healthy: () => boolean }) {
  const { config, clock, log, health, metrics } = app;
  const eventStream = new EventStream(app);
  const authenticator: Authenticator = {
    byKey: async (secret) => {
      const k = await app.store.read(findKeyBySecret(clock, secret, app.cache));
      return k && { kind: 'key', ...k };
    },
    bySession: async (token) => {
      const s = await app.store.read(findSession(clock, token));
      return s && { kind: 'session', workspaceId: s.workspaceId, userId: s.userId, sessionId: s.id };
    },
  };
  // What a scoped key may see of one email, attachment or inbox (http/scopes.ts asks before the route runs).
  const visible: Visible = async (p, kind, id) => {
    if (kind === 'email') return app.store.read(emailVisible(p.workspaceId, p.scope, id));
    if (kind === 'attachment') return app.store.read(attachmentVisible(p.workspaceId, p.scope, id));
    if (kind === 'webhook') {
      const inbox = await app.store.read(value<string | null>('SELECT inbox_id FROM webhooks WHERE workspace_id = ? AND id = ?', p.workspaceId, id));
      return p.scope.permission === 'inbox_access' && !!inbox && p.scope.inboxIds.includes(inbox);
    }
    return p.scope.permission === 'inbox_access' && p.scope.inboxIds.includes(id);
  };
  const rateLimiter = config.rateLimit > 0 ? new RateLimiter(config.rateLimit, clock) : null;
  // Nodes sharing PostgreSQL spend one budget per workspace and client address (cluster/shared-rates.ts).
  const sharedRates = rateLimiter && app.store.dialect === 'postgres' ? new SharedRates(rateLimiter.share(), app) : null;
  // The MCP route calls this same app for each tool (mcp/api.ts): its handler exists once the app is built below.
  let handler: ReturnType<Koa['callback']> | null = null;
  const served = await createServedTls(app);
  const tls = served.current();
  const httpApp = createHttpApp(
    {
      config,
      log,
      authenticator,
      visible,
      rateLimiter,
      healthy: () => opts.healthy() && health.corrupt === null,
      largerBodies: [
        { path: /^\/api\/v1\/emails$/, limitBytes: 20 * MiB },
        { path: /^\/api\/v1\/emails\/batch$/, limitBytes: 50 * MiB },
      ],
      // A draft's file is the request body itself, read by its route with its own caps.
      rawBodies: [/^\/api\/v1\/drafts\/[^/]+\/attachments$/],
      metrics,
      alsoServes: served.serves,
    },
    [accountRoutes(app, new LoginThrottle(app.store, clock, 'login'), { get tlsCert() { return served.current().cert.toString(); }, tlsState: served.state, tryMode: opts.tryMode }), domainRoutes(app), emailRoutes(app), replyRoutes(app), emailListRoutes(app), analyticsRoutes(app), labelRoutes(app, work.resorter), templateRoutes(app), draftRoutes(app), webhookRoutes(app, work.dispatcher, eventStream), inboxRoutes(app), suppressionRoutes(app), reportRoutes(app), spamRoutes(app), billingRoutes(app), boxRoutes(app), auditRoutes(app), mcpRoutes(app, () => handler!)],
    [forwardingPages(app), linkPages(app, work.linkVisits), billingPages(app), metricsPage(app), mtaStsPages(app), dashboardPages()],
  );
  handler = httpApp.callback();
  // errorEnvelope hands on what it answered 5xx: SQLite corruption there turns /healthz to 503.
  httpApp.on('error', (err) => health.observe(err));
  // Port 80 faces the Internet: challenges get their own listener unless the operator put the API there.
  const { acme } = served;
  const sharedPort = acme !== null && config.acmeHttpPort === config.httpPort;
  const httpServer = createHttpServer(httpApp, sharedPort ? (req, res) => acme.challenges.answer(req, res) : undefined);
  const acmeHttp = acme && config.acmeHttpPort !== 0 && !sharedPort ? createChallengeServer(acme.challenges, config.httpsPort) : null;
  const httpsServer = config.httpsPort === 0 ? null : createHttpsServer(httpApp, { key: tls.key, cert: tls.cert, SNICallback: served.sni });
  const mx = createMxServer(app, tls, { analyzer: work.analyzer, writer: app.writer }, new Door(app, work.blocklists, work.doorDns));
  const submission = config.submissionPort === 0 ? null : createSubmissionServer(app, tls, work.analyzer);
  served.attach({ smtp: [mx, submission], https: httpsServer });
  // Behind a TCP load balancer: the client's address from the PROXY header its trusted proxies send.
  const trusted = inRanges(config.trustedProxies);
  if (config.smtpProxyProtocol) acceptProxyProtocol(mx.server, trusted, log, 'SMTP');
  if (config.submissionProxyProtocol && submission) acceptProxyProtocol(submission.server, trusted, log, 'SMTP submission');
  if (config.httpProxyProtocol) acceptProxyProtocol(httpServer, trusted, log, 'HTTP');
  return { eventStream, sharedRates, httpServer, httpsServer, acmeHttp, served, mx, submission };
}

/** Opens SMTP, then submission, then HTTP (with the event stream), each one's close added to `opened`. */
export async function openFrontDoors(config: Config, doors: FrontDoors, opened: Close[]): Promise<Listening> {
  const { mx, submission, eventStream, sharedRates, httpServer, httpsServer, acmeHttp, served } = doors;
  const smtp = await listen(mx.server, config.smtpHost, config.smtpPort, 'SMTP', 'MAILWRIGHT_SMTP_PORT');
  opened.push(() => new Promise<void>((resolve) => mx.close(() => resolve())));
  let submissionAddress: AddressInfo | null = null;
  if (submission) {
    // On the MX listener's address: one SMTP host setting for both (DESIGN.md names no other).
    submissionAddress = await listen(submission.server, config.smtpHost, config.submissionPort, 'SMTP submission', 'MAILWRIGHT_SUBMISSION_PORT', 'MAILWRIGHT_SMTP_HOST');
    opened.push(() => new Promise<void>((resolve) => submission.close(() => resolve())));
  }
  // On smtp_host: the CA and MTA-STS fetchers come from the Internet, as senders do (http_host is often loopback).
  let acmeHttpAddress: AddressInfo | null = null;
  if (acmeHttp) {
    acmeHttpAddress = await listen(acmeHttp, config.smtpHost, config.acmeHttpPort, 'ACME HTTP-01 challenges', 'MAILWRIGHT_ACME_HTTP_PORT', 'MAILWRIGHT_SMTP_HOST');
    opened.push(() => closeHttp(acmeHttp));
  }
  await eventStream.start();
  if (sharedRates) {
    sharedRates.start();
    opened.push(() => sharedRates.stop());
  }
  const http = await listen(httpServer, config.httpHost, config.httpPort, 'HTTP', 'MAILWRIGHT_HTTP_PORT');
  opened.push(() => closeHttp(httpServer));
  // Before the HTTP server closes: open event streams would hold it open.
  opened.push(async () => eventStream.stop());
  let https: AddressInfo | null = null;
  if (httpsServer) {
    https = await listen(httpsServer, config.smtpHost, config.httpsPort, 'HTTPS', 'MAILWRIGHT_HTTPS_PORT', 'MAILWRIGHT_SMTP_HOST');
    opened.push(() => closeHttp(httpsServer));
  }
  // Orders what is missing or due once the challenge listener answers; stopped first, before the listeners close.
  if (served.acme) {
    served.acme.start();
    const acme = served.acme;
    opened.push(() => acme.stop());
  }
  return { smtp, submission: submissionAddress, http, https, acmeHttp: acmeHttpAddress };
}

function listen(server: Server, host: string, port: number, what: string, variable: string, hostVariable = variable.replace('PORT', 'HOST')): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (err.code === 'EACCES') {
        reject(
          new StartupError(
            `cannot listen for ${what} on ${where}: permission denied. Ports below 1024 need root or the CAP_NET_BIND_SERVICE capability ` +
              `(the unit in systemd/ grants it with AmbientCapabilities=CAP_NET_BIND_SERVICE), or set ${variable} to a port above 1023.`,
          ),
        );
      } else if (err.code === 'EADDRINUSE') {
        reject(new StartupError(`cannot listen for ${what} on ${where}: the address is already in use by another program; stop it or set ${variable}.`));
      } else if (err.code === 'EADDRNOTAVAIL') {
        reject(new StartupError(`cannot listen for ${what} on ${where}: this machine has no such address; check the ${hostVariable} setting.`));
      } else {
        reject(err);
      }
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

// Stop accepting, let requests in flight finish (up to 10 s), then drop idle keep-alive connections.
function closeHttp(server: Server & { closeIdleConnections?: () => void; closeAllConnections?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections?.(), 10_000);
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections?.();
  });
}
