// The owner's allow and block lists, per workspace: senders (an address, or a domain with its subdomains) whose
// mail never goes to Spam by content, or always does (and is refused at RCPT when the envelope names them).
// Entries are checked here into one stored form; lookups take the most specific entry that covers a sender.
// Queries for the caller's transaction (db/query.ts); no flow, no route.
import { getPublicSuffix } from 'tldts';
import { all, get, run, value, type Query } from '../db/query.ts';
import { iso } from '../clock.ts';
import { checkAddress } from '../mail/addresses.ts';
import { normaliseDomain } from '../mail/domain-name.ts';

export type SpamList = 'allow' | 'block';
export type EntryKind = 'address' | 'domain';

/** Entries a workspace may hold in both lists together: an owner's list, not a feed of the world's spammers. */
export const MAX_ENTRIES = 10_000;

export interface ListEntry {
  entry: string;
  type: EntryKind;
  createdAt: string;
}

/** An address (`a@example.com`) or a domain (`example.com`, `@example.com` or `*.example.com`), in its stored form, or why not. */
export function parseEntry(input: string): { ok: true; entry: string; kind: EntryKind } | { ok: false; reason: string } {
  const raw = input.trim();
  if (!raw) return { ok: false, reason: 'is empty: give an address (a@example.com) or a domain (example.com)' };
  if (raw.length > 320) return { ok: false, reason: 'is longer than 320 characters' };
  if (/\s/.test(raw)) return { ok: false, reason: `"${raw}" has a space: give one address (a@example.com) or one domain (example.com)` };
  const domainPart = raw.startsWith('@') ? raw.slice(1) : raw.startsWith('*.') ? raw.slice(2) : raw.includes('@') ? null : raw;
  if (domainPart === null) {
    const checked = checkAddress(raw);
    // checkAddress speaks of sending; a list only matches senders, and a domain entry covers any local part.
    if (!checked.ok) return { ok: false, reason: checked.reason.includes('local part') ? `"${raw}" has a local part that is not a plain ASCII dot-atom: list its domain instead` : checked.reason };
    return { ok: true, entry: checked.mailbox.address.toLowerCase(), kind: 'address' };
  }
  const domain = normaliseDomain(domainPart);
  if (!domain.ok) return { ok: false, reason: `"${raw}" ${domain.reason}` };
  // A public suffix (com, co.uk, github.io) would cover every sender under it.
  if (getPublicSuffix(domain.name, { allowPrivateDomains: true }) === domain.name) {
    return { ok: false, reason: `"${raw}" is a public suffix, shared by unrelated senders: give a domain under it, such as example.${domain.name}` };
  }
  return { ok: true, entry: domain.name, kind: 'domain' };
}

interface EntryRow {
  list: SpamList;
  entry: string;
  kind: EntryKind;
  created_at: number;
}

const view = (r: EntryRow): ListEntry => ({ entry: r.entry, type: r.kind, createdAt: iso(r.created_at) });

/** A page of one list, newest first; one more than `limit` tells the caller there are more. */
export function* listEntries(workspaceId: string, list: SpamList, page: { limit: number; offset: number }): Query<ListEntry[]> {
  const rows = yield* all<EntryRow>(
    'SELECT list, entry, kind, created_at FROM spam_lists WHERE workspace_id = ? AND list = ? ORDER BY created_at DESC, entry LIMIT ? OFFSET ?',
    workspaceId, list, page.limit, page.offset,
  );
  return rows.map(view);
}

export function* findEntry(workspaceId: string, entry: string): Query<(ListEntry & { list: SpamList }) | null> {
  const row = yield* get<EntryRow>('SELECT list, entry, kind, created_at FROM spam_lists WHERE workspace_id = ? AND entry = ?', workspaceId, entry);
  return row ? { ...view(row), list: row.list } : null;
}

export type AddOutcome = { added: ListEntry } | { exists: SpamList } | { full: true };

/** Adds an entry unless it is already on a list (this one or the other) or the workspace's lists are full. */
export function* addEntry(workspaceId: string, list: SpamList, parsed: { entry: string; kind: EntryKind }, now: number): Query<AddOutcome> {
  const existing = yield* findEntry(workspaceId, parsed.entry);
  if (existing) return { exists: existing.list };
  const count = (yield* value<number>('SELECT count(*) FROM spam_lists WHERE workspace_id = ?', workspaceId))!;
  if (count >= MAX_ENTRIES) return { full: true };
  yield* run('INSERT INTO spam_lists (workspace_id, list, entry, kind, created_at) VALUES (?, ?, ?, ?, ?)', workspaceId, list, parsed.entry, parsed.kind, now);
  return { added: { entry: parsed.entry, type: parsed.kind, createdAt: iso(now) } };
}

/** Removes an entry from one list; false when that list does not hold it. */
export function* removeEntry(workspaceId: string, list: SpamList, entry: string): Query<boolean> {
  return (yield* run('DELETE FROM spam_lists WHERE workspace_id = ? AND list = ? AND entry = ?', workspaceId, list, entry)) > 0;
}

export interface ListMatch {
  list: SpamList;
  entry: string;
  kind: EntryKind;
}

/**
 * The entry that covers `address` (lower-cased here), most specific first: the address itself, then its domain,
 * then each parent domain. Null when neither list names it. One indexed read.
 */
export function* matchSender(workspaceId: string, address: string): Query<ListMatch | null> {
  return (yield* matchSenders(workspaceId, [address]))[0]!;
}

/** matchSender for each of `addresses`, in one read (on PostgreSQL each statement is a round trip). */
export function* matchSenders(workspaceId: string, addresses: string[]): Query<Array<ListMatch | null>> {
  const candidatesOf = addresses.map(candidates);
  const wanted = [...new Set(candidatesOf.flat())];
  if (!wanted.length) return addresses.map(() => null);
  const rows = yield* all<ListMatch>('SELECT list, entry, kind FROM spam_lists WHERE workspace_id = ? AND entry IN (SELECT value FROM json_each(?))', workspaceId, JSON.stringify(wanted));
  return candidatesOf.map((c) => rows.filter((r) => c.includes(r.entry)).sort((a, b) => c.indexOf(a.entry) - c.indexOf(b.entry))[0] ?? null);
}

/** What may cover an address: itself, then its domain and each parent domain; none for what is not an address. */
function candidates(address: string): string[] {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at < 1 || at === lower.length - 1) return [];
  const labels = lower.slice(at + 1).split('.');
  return [lower, ...labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'))];
}
