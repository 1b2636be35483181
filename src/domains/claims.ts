// Which workspace a domain name belongs to on this box (DESIGN.md section 3, catalogue TEN-01): a name, its
// bounce subdomain and every subdomain belong to the first workspace that added it, so no other workspace can
// add an overlapping name, and mail for it only ever reaches the holder's inboxes. A database from before
// this rule may hold overlapping rows: the oldest claim wins, and `doctor` reports the others.
import { all, get, type Query } from '../db/query.ts';

export interface Claim {
  id: string;
  workspace_id: string;
  name: string;
}

/** `name` and each domain it sits under, down to two labels: a.b.example.com -> itself, b.example.com, example.com. */
const selfAndParents = (name: string): string[] => {
  const labels = name.split('.');
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
};

/**
 * The claim that decides `name`, as a statement: the oldest domain row whose name is `name` or a domain it belongs
 * to. `columns` of it; its one parameter is holderNames(name). A subquery of a caller's statement where one read must do.
 */
export const HOLDER = (columns: string) => `SELECT ${columns} FROM domains WHERE name IN (SELECT value FROM json_each(?)) ORDER BY created_at, id LIMIT 1`;
export const holderNames = (name: string) => JSON.stringify(selfAndParents(name.toLowerCase()));

/** The oldest domain row whose name is `name` or a domain it belongs to: the claim that decides `name`. */
export function* holderOf(name: string): Query<Claim | null> {
  const row = yield* get<Claim>(HOLDER('id, workspace_id, name'), holderNames(name));
  return row ?? null;
}

/**
 * Whether another workspace holds `name`, a domain it belongs to, or a subdomain of it: adding it would then
 * claim what is not this workspace's. Read inside the transaction that inserts, so two racing adds cannot
 * both pass.
 */
export function* claimedElsewhere(workspaceId: string, name: string): Query<boolean> {
  const lower = name.toLowerCase();
  const above = yield* get(`SELECT 1 FROM domains WHERE workspace_id != ? AND name IN (SELECT value FROM json_each(?)) LIMIT 1`, workspaceId, JSON.stringify(selfAndParents(lower)));
  // Domain names hold no LIKE wildcard but `_`, which normaliseDomain refuses; the ESCAPE keeps it exact anyway.
  const below = yield* get(`SELECT 1 FROM domains WHERE workspace_id != ? AND name LIKE ? ESCAPE '\\' LIMIT 1`, workspaceId, `%.${lower.replace(/[\\%_]/g, (c) => `\\${c}`)}`);
  return above !== undefined || below !== undefined;
}

/**
 * Domains added after another workspace's overlapping claim (the same name, one above or one below it), with
 * that older claim: `doctor` lists them. Such rows predate the rule; routing already ignores the younger.
 */
export function* overlappingClaims(): Query<Array<{ domain: Claim; holder: Claim }>> {
  const rows = yield* all<Claim>('SELECT id, workspace_id, name FROM domains ORDER BY created_at, id');
  const age = new Map(rows.map((r, i) => [r.id, i]));
  const byName = new Map<string, Claim[]>();
  for (const r of rows) byName.set(r.name, [...(byName.get(r.name) ?? []), r]);
  const found = new Map<string, { domain: Claim; holder: Claim }>();
  for (const row of rows) {
    for (const other of selfAndParents(row.name).flatMap((n) => byName.get(n) ?? [])) {
      if (other.workspace_id === row.workspace_id) continue;
      const [holder, domain] = age.get(other.id)! < age.get(row.id)! ? [other, row] : [row, other];
      if (!found.has(domain.id)) found.set(domain.id, { domain, holder });
    }
  }
  return [...found.values()];
}
