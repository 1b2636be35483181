// Which sent emails go out as one copy per recipient (links naming their recipient: the box's unsubscribe on
// marketing mail, open and click tracking), decided and stored before the first copy is signed so every later
// copy, retry and click agrees. Untracked transactional mail gets no plan; this must not compose or sign.
import type { App } from '../context.ts';
import { boxSecret } from '../db/box-secret.ts';
import { get, run, type Query } from '../db/query.ts';
import { hasSignedCopy } from '../emails/outgoing.ts';
import { linkToken, publicLink, type LinkPurpose, type LinkSubject } from '../feedback/link-token.ts';
import { CLICK_PATH, OPEN_PATH, findLinks, storeLinks } from '../feedback/tracking.ts';
import { keepsOwnOneClick, unsubscribeAddress, unsubscribeHeaders, UNSUBSCRIBE_PATH } from '../feedback/unsubscribe.ts';

export interface Plan {
  /** The box's List-Unsubscribe pair: marketing mail, unless the sender's own pair stands (keepsOwnOneClick). */
  unsubscribe: boolean;
  open: boolean;
  click: boolean;
  /** How many links the HTML has that clicks are tracked for (email_links). */
  links: number;
}

/** What one recipient's copy gets (personal-copy.ts applies it in a sign worker). */
export interface Personalisation {
  /** Replace any List-Unsubscribe pair of the caller's. */
  headers: Record<string, string> | null;
  /** The n-th tracked link of the HTML becomes links[n]. */
  links: string[] | null;
  /** The open pixel's URL. */
  pixel: string | null;
  /** What {{unsubscribe_url}} in the body becomes: the same one-click link as the List-Unsubscribe header. */
  unsubscribeUrl: string | null;
}

/** The facts of an email a plan is decided from (its emails columns; the bodies read only when needed). */
export interface PlannedEmail {
  id: string;
  message_class: string;
  headers_json: string;
  bodies: () => Query<{ html: string | null; text: string | null }>;
  /** 0 when no plan is stored (read with the email: PLAN_COLUMNS), so none is looked for. */
  planned: number;
  /** The sending domain's settings, read with the email (PLAN_COLUMNS; null without a domain). */
  tracking: DomainTracking | null;
}

type DomainTracking = { open_tracking: number; click_tracking: number; unsubscribe_urls: string };

/**
 * What a plan is decided from, read with the email `e` in the statement that reads it (signed-copies.ts): whether
 * a plan is stored, and its domain's tracking settings (`dm`, joined on e.domain_id).
 */
export const PLAN_COLUMNS = `CASE WHEN EXISTS (SELECT 1 FROM personalised_emails p WHERE p.email_id = e.id) THEN 1 ELSE 0 END AS planned,
  dm.open_tracking, dm.click_tracking, dm.unsubscribe_urls`;

/** The PlannedEmail facts of a row read with PLAN_COLUMNS. */
export const plannedFacts = (row: { planned: number; open_tracking: number | null; click_tracking: number | null; unsubscribe_urls: string | null }): Pick<PlannedEmail, 'planned' | 'tracking'> => ({
  planned: row.planned,
  tracking: row.unsubscribe_urls === null ? null : { open_tracking: row.open_tracking!, click_tracking: row.click_tracking!, unsubscribe_urls: row.unsubscribe_urls },
});

// Forwarded copies (receive/forward.ts marks them so) are someone else's mail passed on: never tracked.
const FORWARDED = 'x-mailwright-forwarded';

export function* storedPlan(emailId: string): Query<Plan | null> {
  const row = yield* get<{ unsubscribe: number; open_tracking: number; click_tracking: number; links: number }>(
    'SELECT unsubscribe, open_tracking, click_tracking, links FROM personalised_emails WHERE email_id = ?',
    emailId,
  );
  return row ? { unsubscribe: row.unsubscribe === 1, open: row.open_tracking === 1, click: row.click_tracking === 1, links: row.links } : null;
}

type Decided = { plan: Plan; links: string[] } | null;

/** `email.bodies` reads the stored bodies when a plan needs them (signed-copies.ts). */
function* decide(email: PlannedEmail): Query<Decided> {
  const headers = JSON.parse(email.headers_json) as Record<string, string>;
  const domain = email.tracking;
  let bodies: { html: string | null; text: string | null } | undefined;
  const read = function* () {
    return (bodies ??= yield* email.bodies());
  };
  // The domain's setting as it is when the email is first signed: a first-party integration's own pair stands.
  const prefixes = domain ? (JSON.parse(domain.unsubscribe_urls) as string[]) : [];
  const unsubscribe = email.message_class === 'marketing' && !(prefixes.length > 0 && keepsOwnOneClick(headers, prefixes, yield* read()));
  const tracked = domain && (domain.open_tracking === 1 || domain.click_tracking === 1) && !Object.keys(headers).some((k) => k.toLowerCase() === FORWARDED);
  const html = tracked ? (yield* read()).html : null;
  const open = html !== null && domain!.open_tracking === 1;
  const links = html !== null && domain!.click_tracking === 1 ? findLinks(html) : [];
  if (!unsubscribe && !open && links.length === 0) return null;
  return { plan: { unsubscribe, open, click: links.length > 0, links: links.length }, links };
}

/**
 * The email's plan: the stored one, or one decided now and made durable before any copy is signed. Null when
 * the email needs none, or when another process has already stored its shared copy (which then stands).
 */
export async function planFor(app: App, email: PlannedEmail): Promise<Plan | null> {
  const { clock, store } = app;
  const found = await store.read(
    (function* (): Query<{ stored: Plan } | { made: Decided }> {
      const stored = email.planned === 0 ? null : yield* storedPlan(email.id);
      return stored ? { stored } : { made: yield* decide(email) };
    })(),
  );
  if ('stored' in found) return found.stored;
  if (!found.made) return null;
  const { plan, links } = found.made;
  await store.write(function* () {
    // An email has one shared copy or a plan, never both: whichever was stored first stands (signed-copies.ts
    // checks the same). The commit holds SQLite's write lock (BEGIN IMMEDIATE) from the check to the insert.
    if (yield* hasSignedCopy(email.id)) return;
    const inserted = yield* run(
      `INSERT INTO personalised_emails (email_id, unsubscribe, open_tracking, click_tracking, links, created_at)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      email.id, Number(plan.unsubscribe), Number(plan.open), Number(plan.click), plan.links, clock.now(),
    );
    if (inserted) yield* storeLinks(email.id, links);
  });
  return store.read(storedPlan(email.id));
}

/** The links and headers of one recipient's copy; `returnPath` is the domain its mailto address is on. */
export async function personalisation(app: App, plan: Plan, copy: LinkSubject & { returnPath: string }): Promise<Personalisation> {
  const secret = await boxSecret(app.store);
  const subject: LinkSubject = { emailId: copy.emailId, recipient: copy.recipient, index: copy.index };
  const token = (purpose: LinkPurpose, link?: number) => linkToken(secret, purpose, link === undefined ? subject : { ...subject, link });
  const url = (path: string, t: string) => publicLink(app.config.publicUrl, path, t);
  const unsubscribe = token('unsubscribe');
  return {
    headers: plan.unsubscribe ? unsubscribeHeaders(url(UNSUBSCRIBE_PATH, unsubscribe), unsubscribeAddress(unsubscribe, copy.returnPath)) : null,
    links: plan.click ? Array.from({ length: plan.links }, (_, n) => url(CLICK_PATH, token('click', n))) : null,
    pixel: plan.open ? url(OPEN_PATH, token('open')) : null,
    unsubscribeUrl: plan.unsubscribe ? url(UNSUBSCRIBE_PATH, unsubscribe) : null,
  };
}
