// What the per-recipient links in sent mail open, at the root of the public URL (outside /api/v1, no login:
// the signed token in the path is the capability, and a cross-site form cannot forge one):
//   GET  /unsubscribe/:token  a page saying what the button does; changes nothing (link scanners open links)
//   POST /unsubscribe/:token  unsubscribes: the page's button, and RFC 8058 one-click POSTs from mail
//                             providers (body List-Unsubscribe=One-Click). The body is never read: the token
//                             alone decides, so url-encoded, multipart or empty bodies all work
//   GET  /open/:token         the 1x1 GIF of an opened message; records `opened`
//   GET  /click/:token        302 to the message's own link; records `clicked`
// HEAD answers like GET and records nothing: it is a link checker or a proxy probing, not a person.
// Opens and clicks are counted (visits.ts) only within a per-address budget; past it the image is still served
// and the click still redirects, so nobody reading mail is ever refused, but nothing is written.
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { boxSecret } from '../db/box-secret.ts';
import { pageRouter } from '../http/server.ts';
import { clientKey } from '../dns/ip-ranges.ts';
import { RateLimiter } from '../http/rate-limit.ts';
import { escapeHtml, renderPage, sendPage } from '../pages/html.ts';
import { clickTarget, CLICK_PATH, OPEN_PATH, openHolder, type LinkVisit, type Visit } from './tracking.ts';
import type { LinkVisits } from './visits.ts';
import { checkUnsubscribe, ONE_CLICK, unsubscribe, UNSUBSCRIBE_PATH, type UnsubscribeState } from './unsubscribe.ts';

// The smallest transparent GIF (1x1, 43 bytes).
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Visits one client address (an IPv6 /64) may have counted: a burst, then a steady rate. Generous, because the
 * image proxies of Gmail and Apple Mail fetch the pixels of many recipients from few addresses, and each
 * recipient's first open must still count; a flood of one link writes one row whatever this allows (visits.ts).
 */
export const VISITS_PER_ADDRESS = { perSecond: 20, burst: 600 };

export function linkPages(app: App, visits: Pick<LinkVisits, 'visit'>) {
  const { store, clock, log } = app;
  const r = pageRouter();
  const perAddress = new RateLimiter(VISITS_PER_ADDRESS.perSecond, clock, VISITS_PER_ADDRESS.burst);

  /** Counts the visit `of` names (null: a token the box did not make); never throws, never refuses the visitor. */
  const count = async (ctx: Context, of: () => LinkVisit | null | Promise<LinkVisit | null>): Promise<void> => {
    if (ctx.method !== 'GET') return;
    // Before an open token is even checked: a flood of made-up tokens costs no more than a flood of one.
    if (!perAddress.take(clientKey(ctx.ip)).allowed) return void app.metrics?.trackingVisit('limited');
    const visit = await of();
    if (!visit) return;
    try {
      app.metrics?.trackingVisit(await visits.visit(visit));
    } catch (err) {
      // The image and the redirect matter more to the reader than the count: answered all the same.
      log.warn('could not record a tracking visit', { err, emailId: visit.holder.emailId, type: visit.type });
    }
  };

  r.get(`${UNSUBSCRIBE_PATH}/:token`, async (ctx) => sendPage(ctx, unsubscribePage(await store.read(checkUnsubscribe(await boxSecret(store), ctx.params.token)))));
  r.post(`${UNSUBSCRIBE_PATH}/:token`, async (ctx) => {
    const secret = await boxSecret(store);
    const found = await store.write(() => unsubscribe(secret, clock, ctx.params.token, 'https'));
    if (found.state !== 'invalid' && found.justNow) log.info('unsubscribed', { workspaceId: found.workspaceId, emailId: found.emailId, recipient: found.recipient });
    sendPage(ctx, unsubscribePage(found));
  });

  r.get(`${OPEN_PATH}/:token`, async (ctx) => {
    await count(ctx, async () => {
      const holder = await store.read(openHolder(await boxSecret(store), ctx.params.token));
      return holder && { holder, type: 'opened', url: null, visit: visitOf(ctx) };
    });
    // The same image whatever the token: a broken image in an old message helps nobody.
    ctx.set('Cache-Control', 'no-store, no-cache, must-revalidate, max-age=0');
    ctx.set('Pragma', 'no-cache');
    ctx.set('Expires', '0');
    // Shown inside webmail pages of other origins: the API's same-origin policy would block it there.
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    ctx.type = 'image/gif';
    ctx.body = PIXEL;
  });

  r.get(`${CLICK_PATH}/:token`, async (ctx) => {
    const target = await store.read(clickTarget(await boxSecret(store), ctx.params.token));
    if (!target) return sendPage(ctx, { status: 404, html: renderPage('Link not valid', '<p>This link is not valid. If you copied it from a message, check that it is complete.</p>') });
    await count(ctx, () => ({ holder: target, type: 'clicked', url: target.url, visit: visitOf(ctx) }));
    ctx.redirect(target.url);
  });

  return r;
}

// ctx.ip is the client: the peer, or the address a trusted proxy names (http/client-address.ts).
const visitOf = (ctx: Context): Visit => ({ userAgent: ctx.get('User-Agent').slice(0, 500) || null, ip: ctx.ip });

function unsubscribePage(found: UnsubscribeState): { status: number; html: string } {
  switch (found.state) {
    case 'invalid':
      return {
        status: 404,
        html: renderPage('Link not valid', '<p>This unsubscribe link is not valid. If you copied it from a message, check that it is complete, or reply to the message and ask to be removed.</p>'),
      };
    case 'unsubscribed':
      return {
        status: 200,
        html: renderPage(
          found.justNow ? 'You are unsubscribed' : 'You are already unsubscribed',
          `<p><b>${escapeHtml(found.recipient)}</b> will get no more marketing mail from <b>${escapeHtml(found.domain)}</b>.</p>
<p class="small">Messages you need, such as receipts and password resets, still arrive.</p>`,
        ),
      };
    case 'subscribed': {
      const [name, value] = ONE_CLICK.split('=');
      return {
        status: 200,
        html: renderPage(
          'Unsubscribe',
          `<p>Stop marketing mail from <b>${escapeHtml(found.domain)}</b> to <b>${escapeHtml(found.recipient)}</b>?</p>
<form method="post"><input type="hidden" name="${name}" value="${value}"><button type="submit">Unsubscribe</button></form>
<p class="small">Nothing changes unless you press the button. Messages you need, such as receipts, still arrive.</p>`,
        ),
      };
    }
  }
}
