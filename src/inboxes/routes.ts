// Inbox endpoints of API-SPEC.md 4.4: create an address on a domain of the workspace, list, show, rename or
// disable (a disabled inbox refuses mail at RCPT), delete (its messages are kept), set forwarding; and the
// page behind the forwarding confirmation link (outside /api/v1, no login: the token is the capability).
import { actorOf, type AuditActor, recordAudit } from '../account/audit.ts';
import { z } from 'zod';
import type { Context } from 'koa';
import type { App } from '../context.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { apiRouter, pageRouter } from '../http/server.ts';
import { sendPage } from '../pages/html.ts';
import { principalOf, requireAuth, scopeOf } from '../http/auth.ts';
import { parseInput } from '../http/validate.ts';
import { pageOf, parsePage } from '../http/pagination.ts';
import { getDomain } from '../domains/domains.ts';
import { holderOf } from '../domains/claims.ts';
import { LOCAL_PART, parseMailbox } from '../mail/addresses.ts';
import { planSend, sendStep } from '../send/submit.ts';
import { boxSecret } from '../db/box-secret.ts';
import type { Query } from '../db/query.ts';
import { addDomainEvent } from '../domains/domain-events.ts';
import { createInbox, deleteInbox, getInbox, InboxExists, listInboxes, presentInbox, updateInbox, type InboxRow } from './inboxes.ts';
import {
  activate,
  checkToken,
  confirm,
  CONFIRM_PATH,
  confirmationLink,
  confirmationMail,
  confirmationPage,
  isInboxAddress,
  isOwnerAddress,
  newConfirmation,
  turnOff,
  type TokenState,
} from './forwarding.ts';

const name = z.string().trim().max(200).regex(/^[^\p{Cc}]*$/u, 'must not contain control characters');

const CreateBody = z
  .object({
    domain_id: z.string().min(1, 'is required'),
    local_part: z.string().max(64, 'must be at most 64 characters').regex(LOCAL_PART, 'must be a plain local part such as support or first.last'),
    name: name.optional(),
  })
  .strict();
const PatchBody = z
  .object({ name: name.optional(), status: z.enum(['active', 'disabled']).optional() })
  .strict()
  .refine((b) => b.name !== undefined || b.status !== undefined, { message: 'give name or status' });
const ListQuery = z.object({ domain_id: z.string().min(1).optional() }).passthrough();
const ForwardingBody = z
  .object({
    forward_to: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required: an address, or null to turn forwarding off' : 'must be an address or null') })
      .transform((s, ctx) => {
        const parsed = parseMailbox(s);
        if (parsed.ok) return parsed.mailbox.address;
        ctx.addIssue({ code: 'custom', message: parsed.reason });
        return z.NEVER;
      })
      .nullable(),
  })
  .strict();

const presentForwarding = (row: InboxRow) => ({ id: row.id, address: row.address, forwardTo: row.forward_to, forwardStatus: row.forward_status });

export function inboxRoutes(app: App) {
  const { store, clock } = app;
  const r = apiRouter();
  const auth = requireAuth(app.config.publicUrl);
  // With whether it receives now: its domain's inbound state, from the domain's last MX check.
  function* shown(row: InboxRow) {
    return presentInbox(row, (yield* getDomain(row.workspace_id, row.domain_id))?.inbound_status ?? null);
  }
  function* shownAll(rows: InboxRow[]) {
    const out: Array<ReturnType<typeof presentInbox>> = [];
    for (const row of rows) out.push(yield* shown(row));
    return out;
  }
  function* shownInbox(workspaceId: string, id: string) {
    const row = yield* getInbox(workspaceId, id);
    if (!row) throw notFound('Inbox');
    return yield* shown(row);
  }

  r.post('/inboxes', auth, async (ctx) => {
    const body = parseInput(CreateBody, ctx.request.body);
    const p = principalOf(ctx);
    const workspaceId = p.workspaceId;
    const { domain, holder } = await store.read(
      (function* () {
        const domain = yield* getDomain(workspaceId, body.domain_id);
        return { domain, holder: domain && (yield* holderOf(domain.name)) };
      })(),
    );
    if (!domain) throw notFound('Domain');
    if (holder?.workspace_id !== workspaceId) {
      throw new ApiError(409, 'domain_exists', `The domain ${domain.name} overlaps a domain another workspace added first; it cannot receive mail here (see mailwright doctor)`);
    }
    try {
      const row = await store.write(function* () {
        const made = yield* createInbox(clock, { workspaceId, domainId: domain.id, domain: domain.name, localPart: body.local_part, name: body.name ?? '' });
        yield* inboxChanged(actorOf(p, ctx.ip), made, 'inbox.created');
        return made;
      });
      ctx.status = 201;
      ctx.body = presentInbox(row, domain.inbound_status);
    } catch (err) {
      if (err instanceof InboxExists) throw new ApiError(409, 'inbox_exists', `The address ${err.message} is already an inbox`);
      throw err;
    }
  });

  r.get('/inboxes', auth, async (ctx) => {
    const { domain_id } = parseInput(ListQuery, ctx.query, 'query');
    const page = parsePage(ctx.query);
    const scope = scopeOf(principalOf(ctx));
    const only = scope.permission === 'inbox_access' ? scope.inboxIds : undefined;
    const workspaceId = principalOf(ctx).workspaceId;
    const rows = await store.read(
      (function* () {
        return yield* shownAll(yield* listInboxes(workspaceId, domain_id, page, only));
      })(),
    );
    ctx.body = pageOf(rows, page);
  });

  r.get('/inboxes/:id', auth, async (ctx) => {
    ctx.body = await store.read(shownInbox(principalOf(ctx).workspaceId, ctx.params.id));
  });

  r.patch('/inboxes/:id', auth, async (ctx) => {
    const body = parseInput(PatchBody, ctx.request.body);
    const p = principalOf(ctx);
    const row = await store.write(function* () {
      const changed = yield* updateInbox(p.workspaceId, ctx.params.id, body);
      if (changed) yield* recordAudit(clock.now(), actorOf(p, ctx.ip), { workspaceId: p.workspaceId, action: 'inbox.updated', target: { type: 'inbox', id: changed.id, name: changed.address }, data: body });
      return changed;
    });
    if (!row) throw notFound('Inbox');
    ctx.body = await store.read(shown(row));
  });

  r.delete('/inboxes/:id', auth, async (ctx) => {
    const p = principalOf(ctx);
    const deleted = await store.write(function* () {
      const row = yield* getInbox(p.workspaceId, ctx.params.id);
      if (!row || !(yield* deleteInbox(p.workspaceId, row.id))) return false;
      yield* inboxChanged(actorOf(p, ctx.ip), row, 'inbox.deleted');
      return true;
    });
    if (!deleted) throw notFound('Inbox');
    ctx.body = { ok: true };
  });

  // null: off. The workspace owner's own address: active at once. Any other address: pending, and a
  // confirmation mail with the link goes to it through the send path (so it is one metered recipient, and
  // the inbox's domain must be verified: else 403 and nothing changes). The inbox change and the mail are
  // committed together: the inbox is never pending without its mail queued, nor the mail queued for nothing.
  r.put('/inboxes/:id/forwarding', auth, async (ctx) => {
    const { forward_to: address } = parseInput(ForwardingBody, ctx.request.body);
    const p = principalOf(ctx);
    const workspaceId = p.workspaceId;
    const actor = actorOf(p, ctx.ip);
    const { inbox, toInbox, toOwner } = await store.read(
      (function* () {
        const inbox = yield* getInbox(workspaceId, ctx.params.id);
        if (!inbox || address === null) return { inbox, toInbox: false, toOwner: false };
        return { inbox, toInbox: yield* isInboxAddress(address), toOwner: yield* isOwnerAddress(workspaceId, address) };
      })(),
    );
    if (!inbox) throw notFound('Inbox');
    const audit = (forwardTo: string | null, forwardStatus: string) =>
      recordAudit(clock.now(), actor, { workspaceId, action: 'inbox.forwarding_changed', target: { type: 'inbox', id: inbox.id, name: inbox.address }, data: { forwardTo, forwardStatus } });
    if (address === null) {
      await store.write(function* () {
        yield* turnOff(inbox);
        yield* audit(null, 'off');
      });
    } else if (toInbox) {
      throw validationError('forward_to', `${address} is an inbox on this box: its mail already arrives here, and forwarding to it would loop`);
    } else if (toOwner) {
      await store.write(function* () {
        yield* activate(inbox, address);
        yield* audit(address, 'active');
      });
    } else if (inbox.forward_status === 'active' && inbox.forward_to?.toLowerCase() === address.toLowerCase()) {
      // Already confirmed for this address: nothing to do, no second mail.
    } else {
      const confirmation = newConfirmation(await boxSecret(store), clock, inbox, address);
      const mail = confirmationMail(inbox, address, confirmationLink(app.config.publicUrl, confirmation.token));
      const { step, transfer } = sendStep([await planConfirmation(inbox, address, mail, workspaceId)]);
      await app.writer.commit([step, { kind: 'forwarding.pending', payload: { ...confirmation.pending, actor } }], { now: clock.now(), log: app.log, transfer });
      app.queue.wake();
    }
    const row = await store.read(getInbox(workspaceId, inbox.id));
    if (!row) throw notFound('Inbox');
    ctx.body = presentForwarding(row);
  });

  /** inbox.created / inbox.deleted: the audit row and the event, in the caller's transaction. */
  function* inboxChanged(actor: AuditActor, row: InboxRow, action: 'inbox.created' | 'inbox.deleted'): Query<void> {
    const now = clock.now();
    yield* recordAudit(now, actor, { workspaceId: row.workspace_id, action, target: { type: 'inbox', id: row.id, name: row.address } });
    yield* addDomainEvent(now, { workspaceId: row.workspace_id, domainId: row.domain_id, inboxId: row.id, type: action, data: { inbox: { id: row.id, address: row.address, name: row.name, domainId: row.domain_id } } });
  }

  async function planConfirmation(inbox: InboxRow, address: string, mail: ReturnType<typeof confirmationMail>, workspaceId: string) {
    try {
      return await store.read(planSend(app, workspaceId, {
        from: { ...(inbox.name ? { name: inbox.name } : {}), address: inbox.address },
        to: [{ address }],
        cc: [],
        bcc: [],
        replyTo: [],
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        // RFC 3834 5: made by the box, not a person; auto-responders must not answer it.
        headers: { 'Auto-Submitted': 'auto-generated' },
        attachments: [],
        tags: [],
        labels: [],
        messageClass: 'transactional',
        // The box's own notice, not the workspace's sending: analytics and reputation leave it out.
        notice: true,
      }));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'domain_not_verified') {
        const domain = inbox.address.slice(inbox.address.lastIndexOf('@') + 1);
        throw new ApiError(
          403,
          'domain_not_verified',
          `Forwarding to ${address} needs a confirmation mail from ${inbox.address}, and ${domain} is not verified for sending: publish its DNS records and POST /domains/${inbox.domain_id}/verify`,
        );
      }
      throw err;
    }
  }

  return r;
}

/**
 * The page behind a forwarding confirmation link, at the root (not /api/v1). GET only shows what the link
 * would do (link scanners and previews open links; they must not confirm anything); the page's button POSTs
 * to the same URL, which confirms. No cookie or login is involved and none is needed: the signed token in the
 * path is the capability, known only to whoever received the mail, so a cross-site form POST (CSRF) cannot
 * forge one, and the POST body is never read.
 */
export function forwardingPages(app: App) {
  const { store, clock } = app;
  const r = pageRouter();
  r.get(`${CONFIRM_PATH}/:token`, async (ctx) => showPage(ctx, await store.read(checkToken(await boxSecret(store), clock, ctx.params.token))));
  r.post(`${CONFIRM_PATH}/:token`, async (ctx) => {
    const secret = await boxSecret(store);
    const found = await store.write(() => confirm(secret, clock, ctx.params.token, ctx.ip));
    if (found.state === 'confirmed' && found.justNow) app.log.info('forwarding confirmed', { inboxId: found.inbox.id, forwardTo: found.address });
    showPage(ctx, found);
  });
  return r;
}

function showPage(ctx: Context, found: TokenState) {
  sendPage(ctx, confirmationPage(found));
}
