// Who gets the free webhook delivery slots (catalogue RES-16): every workspace, and every endpoint in it, is
// owed a small share; beyond it a slot is only lent while some stay free, the more the more it already holds,
// so one workspace's slow endpoints never hold every slot that another workspace's deliveries, or another
// endpoint of its own, would wait for.

export interface Shares {
  /** Deliveries in flight at once, box-wide. */
  slots: number;
  /** Never more than this to one endpoint at once, lent or not. */
  perEndpoint: number;
  /** A workspace holding fewer, for an endpoint holding fewer than `endpointShare`, takes any free slot. */
  workspaceShare: number;
  endpointShare: number;
  /** Beyond the shares, a slot is lent only while this many stay free after it: for an endpoint's first slot, */
  keepFreeForFirst: number;
  /** for an endpoint within its share (of a workspace beyond its own), */
  keepFreeWithinShare: number;
  /** and for an endpoint beyond its share. */
  keepFreeBeyondShare: number;
}

export const DEFAULT_SHARES: Shares = { slots: 16, perEndpoint: 4, workspaceShare: 4, endpointShare: 2, keepFreeForFirst: 2, keepFreeWithinShare: 4, keepFreeBeyondShare: 6 };

/** An enabled endpoint with deliveries due, and since when the oldest of them is due. */
export interface DueEndpoint {
  id: string;
  workspaceId: string;
  dueAt: number;
}

/** Slots held now (by this process's attempts in flight), per endpoint and per workspace. */
export interface Held {
  endpoints: ReadonlyMap<string, number>;
  workspaces: ReadonlyMap<string, number>;
}

/**
 * Hands out `free` slots one at a time: to the workspace holding fewest, within it to the endpoint holding
 * fewest, the longest waiting first among equals (so workspaces, then their endpoints, take turns). `take`
 * claims the endpoint's next delivery and answers false when it has no more. Answers how many were taken.
 */
export function handOut(due: DueEndpoint[], held: Held, free: number, s: Shares, take: (e: DueEndpoint) => boolean): number {
  const endpoints = new Map(held.endpoints);
  const workspaces = new Map(held.workspaces);
  const count = (m: Map<string, number>, k: string) => m.get(k) ?? 0;
  let open = due.filter((e) => count(endpoints, e.id) < s.perEndpoint);
  let taken = 0;
  while (free > 0 && open.length > 0) {
    open.sort((a, b) => count(workspaces, a.workspaceId) - count(workspaces, b.workspaceId) || count(endpoints, a.id) - count(endpoints, b.id) || a.dueAt - b.dueAt);
    const next = open.find((e) => free - 1 >= keepFree(count(workspaces, e.workspaceId), count(endpoints, e.id), s));
    if (!next) break;
    if (!take(next)) {
      open = open.filter((e) => e !== next);
      continue;
    }
    taken++;
    free--;
    endpoints.set(next.id, count(endpoints, next.id) + 1);
    workspaces.set(next.workspaceId, count(workspaces, next.workspaceId) + 1);
    if (count(endpoints, next.id) >= s.perEndpoint) open = open.filter((e) => e !== next);
  }
  return taken;
}

/** How many slots must stay free after one more goes to an endpoint holding `n` of a workspace holding `w`. */
function keepFree(w: number, n: number, s: Shares): number {
  if (n >= s.endpointShare) return s.keepFreeBeyondShare;
  if (w < s.workspaceShare) return 0;
  return n === 0 ? s.keepFreeForFirst : s.keepFreeWithinShare;
}
