// Sender reputation from the workspace's own history (sender_history, 0037): whom it wrote to, whose mail the
// owner kept (read outside Spam, or moved out of it) and whose mail the owner reported. A sender with good
// history leans to ham; a first contact leans to neither. Queries for the caller's transaction (db/query.ts).
import { change, get, type Query } from '../db/query.ts';
import type { Signal } from './signals.ts';

/**
 * How far each kind of history leans, as a spam probability (signals.ts). Someone the workspace wrote to is the
 * strongest sign of a real correspondent; kept mail a little less (the owner may just not have bothered to
 * report it). A From that nothing authenticated could be forged, so it leans less; a domain-wide lean only
 * counts for an authenticated From (DMARC pass), and stays mild: one colleague at a large provider says
 * little about the next sender there.
 */
export const LEAN = {
  wroteAddress: 0.05,
  keptAddress: 0.1,
  unauthenticated: 0.25,
  domain: 0.3,
} as const;

export const FIRST_CONTACT = 'First mail from this sender: no history either way';

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

function* touch(workspaceId: string, address: string, column: 'wrote_at' | 'kept_at' | 'reported_at', now: number): Query<void> {
  const lower = address.trim().toLowerCase();
  if (lower.lastIndexOf('@') < 1) return;
  yield* change(
    `INSERT INTO sender_history (workspace_id, address, domain, ${column}) VALUES (?, ?, ?, ?)
     ON CONFLICT (workspace_id, address) DO UPDATE SET ${column} = excluded.${column}`,
    workspaceId, lower, domainOf(lower), now,
  );
}

/** The workspace sent mail to these addresses. */
export function* noteWrote(workspaceId: string, addresses: readonly string[], now: number): Query<void> {
  for (const a of addresses) yield* touch(workspaceId, a, 'wrote_at', now);
}

/** The owner kept this sender's mail: read it outside Spam, or moved it out of Spam. */
export const noteKept = (workspaceId: string, address: string, now: number) => touch(workspaceId, address, 'kept_at', now);

/** The owner reported this sender's mail as spam: what was kept before no longer counts. */
export const noteReported = (workspaceId: string, address: string, now: number) => touch(workspaceId, address, 'reported_at', now);

interface HistoryRow {
  address: string;
  wrote_at: number | null;
  kept_at: number | null;
  reported_at: number | null;
}

/** Kept mail counts only when it is newer than the sender's last report. */
const kept = (r: HistoryRow) => r.kept_at !== null && (r.reported_at === null || r.kept_at > r.reported_at);

/**
 * The reputation signal for mail from `address`: the address's own history first, else its domain's (for an
 * authenticated From only), else the first-contact note (weight 0.5, which leans to neither side).
 */
export function* reputationOf(workspaceId: string, address: string, fromAuthenticated: boolean): Query<Signal> {
  const lower = address.trim().toLowerCase();
  const domain = domainOf(lower);
  // The address's row and whether its domain has a kept or written-to neighbour, in one read (on PostgreSQL each
  // statement is a round trip); the neighbours only count for an authenticated From.
  const read = (yield* get<Partial<HistoryRow> & { neighbours: number }>(
    `SELECT h.address, h.wrote_at, h.kept_at, h.reported_at,
       (? = 1 AND EXISTS (SELECT 1 FROM sender_history n WHERE n.workspace_id = ? AND n.domain = ?
          AND (n.wrote_at IS NOT NULL OR (n.kept_at IS NOT NULL AND (n.reported_at IS NULL OR n.kept_at > n.reported_at))))) AS neighbours
     FROM (SELECT 1 AS one) AS o LEFT JOIN sender_history h ON h.workspace_id = ? AND h.address = ?`,
    fromAuthenticated ? 1 : 0, workspaceId, domain, workspaceId, lower,
  ))!;
  const own = read.address == null ? undefined : (read as HistoryRow);
  const forged = fromAuthenticated ? '' : ' (the From address is not authenticated, so it counts for less)';
  if (own?.wrote_at != null) return { kind: 'reputation', detail: `You wrote to this sender before${forged}`, weight: fromAuthenticated ? LEAN.wroteAddress : LEAN.unauthenticated };
  if (own && kept(own)) return { kind: 'reputation', detail: `You kept this sender's mail out of Spam before${forged}`, weight: fromAuthenticated ? LEAN.keptAddress : LEAN.unauthenticated };
  if (own?.reported_at != null) return { kind: 'reputation', detail: "You reported this sender's mail as spam before", weight: 0.5 };
  if (read.neighbours === 1) return { kind: 'reputation', detail: `You wrote to or kept mail from others at ${domain}`, weight: LEAN.domain };
  return { kind: 'reputation', detail: FIRST_CONTACT, weight: 0.5 };
}
