// The checkout page, outside /api/v1, where POST /billing/checkout's URL leads:
//   GET  /billing/checkout/:id   shows the plan and what it replaces; changes nothing
//   POST /billing/checkout/:id   the page's button: confirms a manual checkout, activating the plan
// Unlike the links in mail, the id is no capability: both need the owner's session cookie (a page without
// it says to sign in), the checkout must be of the session's workspace (else 404), and the POST passes the
// same-origin rule of every cookie write (http/auth.ts checkOrigin; the cookie is SameSite=Lax too). Stripe
// sends the browser back here (?result=success|canceled); its checkouts are confirmed by Stripe's webhook.
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { ApiError } from '../errors.ts';
import { pageRouter } from '../http/server.ts';
import { checkOrigin, SESSION_COOKIE } from '../http/auth.ts';
import { escapeHtml, renderPage, sendPage } from '../pages/html.ts';
import { findSession } from '../account/sessions.ts';
import type { Plan } from '../config/config.ts';
import { confirmCheckout, viewCheckout, type CheckoutView } from './checkout.ts';
import { CHECKOUT_PAGE_PATH } from './manual.ts';

type Page = { status: number; html: string };

export function billingPages(app: App) {
  const { store, clock, config } = app;
  const r = pageRouter();

  const workspaceOf = async (ctx: Context): Promise<string | null> => {
    const token = ctx.cookies.get(SESSION_COOKIE);
    return (token && (await store.read(findSession(clock, token)))?.workspaceId) || null;
  };

  r.get(`${CHECKOUT_PAGE_PATH}/:id`, async (ctx) => {
    const workspaceId = await workspaceOf(ctx);
    const result = ctx.query.result === 'success' || ctx.query.result === 'canceled' ? ctx.query.result : null;
    show(ctx, workspaceId ? checkoutPage(await store.read(viewCheckout(app, workspaceId, ctx.params.id)), result) : signInPage(config.publicUrl));
  });

  r.post(`${CHECKOUT_PAGE_PATH}/:id`, async (ctx) => {
    try {
      checkOrigin(ctx, config.publicUrl);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return show(ctx, { status: 403, html: renderPage('Request refused', '<p>This confirmation must be sent from the checkout page of this box. Nothing was changed.</p>') });
    }
    const token = ctx.cookies.get(SESSION_COOKIE);
    const session = token ? await store.read(findSession(clock, token)) : null;
    if (!session) return show(ctx, signInPage(config.publicUrl));
    const actor = { type: 'user' as const, id: session.userId, sessionId: session.id, ip: ctx.ip };
    show(ctx, checkoutPage(await confirmCheckout(app, session.workspaceId, ctx.params.id, actor), null));
  });

  return r;
}

function show(ctx: Context, page: Page): void {
  ctx.set('Cache-Control', 'no-store');
  sendPage(ctx, page);
}

function signInPage(publicUrl: string): Page {
  return {
    status: 401,
    html: renderPage(
      'Sign in first',
      `<p>This checkout belongs to a workspace of this box. Sign in to the dashboard at <b>${escapeHtml(publicUrl)}</b> as the workspace's owner, then open this link again.</p>`,
    ),
  };
}

function checkoutPage(view: CheckoutView, result: 'success' | 'canceled' | null): Page {
  switch (view.kind) {
    case 'missing':
      return { status: 404, html: renderPage('Checkout not found', '<p>There is no such checkout in your workspace. Start again from the dashboard.</p>') };
    case 'completed':
      return {
        status: 200,
        html: renderPage(view.justNow ? 'Subscription active' : 'Already confirmed', `<p>Your workspace holds the plan ${describe(view.plan)} from now on.</p>`),
      };
    case 'closed': {
      const why = {
        expired: 'It was not confirmed within 24 hours. Start again from the dashboard.',
        held: 'Your workspace already holds this plan.',
        canceled: 'It was closed without activating a plan.',
        withdrawn: 'The plan it was for is no longer offered by this box.',
      }[view.reason];
      return { status: 409, html: renderPage('Checkout closed', `<p>This checkout is closed. ${why} Nothing was changed.</p>`) };
    }
    case 'open': {
      const replaces = view.replaces ? `<p>It replaces the ${escapeHtml(view.plan.messageClass)} plan your workspace holds now, ${describe(view.replaces)}.</p>` : '';
      if (view.checkout.provider !== 'manual') {
        const text =
          result === 'success'
            ? '<p>Payment received. The plan becomes active as soon as Stripe confirms it to this box; reload this page in a moment.</p>'
            : result === 'canceled'
              ? '<p>The checkout was canceled and nothing was charged. You can start again from the dashboard.</p>'
              : `<p>This checkout of ${describe(view.plan)} is waiting for payment at Stripe.</p>`;
        return { status: 200, html: renderPage('Checkout', text + replaces) };
      }
      return {
        status: 200,
        html: renderPage(
          'Confirm your plan',
          `<p>Subscribe this workspace to ${describe(view.plan)}?</p>
${replaces}<form method="post"><button type="submit">Confirm</button></form>
<p class="small">Nothing changes unless you press the button. Billing on this box is manual: no payment is taken here.</p>`,
        ),
      };
    }
  }
}

function describe(plan: Plan): string {
  const limit = (n: number | null, what: string) => (n === null ? `unlimited ${what}` : `${n.toLocaleString('en')} ${what}`);
  return `<b>${escapeHtml(plan.key)}</b> (${escapeHtml(plan.tier)}, ${escapeHtml(plan.messageClass)} mail, ${escapeHtml(price(plan))} ${plan.interval === 'yearly' ? 'a year' : 'a month'}; ${limit(plan.limits.recipients, 'recipients')} and ${limit(plan.limits.attachmentBytes, 'attachment bytes')} a month)`;
}

/** The price in major units of its currency (minor units in the config: 1900 USD is $19.00, 500 JPY is ¥500). */
function price(plan: Plan): string {
  const format = new Intl.NumberFormat('en', { style: 'currency', currency: plan.currency });
  return format.format(plan.price / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}
