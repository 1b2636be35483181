// The owner's allow and block lists, per workspace: senders (an address, or a domain with its subdomains) whose
// mail never goes to Spam by content, or always does (and is refused at RCPT when the envelope names them).
// Entries are checked here into one stored form; lookups take the most specific entry that covers a sender.
// Synchronous SQL for the caller's transaction; no flow, no route.
import { getPublicSuffix } from 'tldts';
import type { Db } from '../db/open.ts';
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
export function listEntries(db: Db, workspaceId: string, list: SpamList, page: { limit: number; offset: number }): ListEntry[] {
  return (
    db
      .prepare('SELECT list, entry, kind, created_at FROM spam_lists WHERE workspace_id = ? AND list = ? ORDER BY created_at DESC, entry LIMIT ? OFFSET ?')
      .all(workspaceId, list, page.limit, page.offset) as EntryRow[]
  ).map(view);
}

export function findEntry(db: Db, workspaceId: string, entry: string): (ListEntry & { list: SpamList }) | null {
  const row = db.prepare('SELECT list, entry, kind, created_at FROM spam_lists WHERE workspace_id = ? AND entry = ?').get(workspaceId, entry) as EntryRow | undefined;
  return row ? { ...view(row), list: row.list } : null;
}

export type AddOutcome = { added: ListEntry } | { exists: SpamList } | { full: true };

/** Adds an entry unless it is already on a list (this one or the other) or the workspace's lists are full. */
export function addEntry(db: Db, workspaceId: string, list: SpamList, parsed: { entry: string; kind: EntryKind }, now: number): AddOutcome {
  const existing = findEntry(db, workspaceId, parsed.entry);
  if (existing) return { exists: existing.list };
  const count = db.prepare('SELECT count(*) FROM spam_lists WHERE workspace_id = ?').pluck().get(workspaceId) as number;
  if (count >= MAX_ENTRIES) return { full: true };
  db.prepare('INSERT INTO spam_lists (workspace_id, list, entry, kind, created_at) VALUES (?, ?, ?, ?, ?)').run(workspaceId, list, parsed.entry, parsed.kind, now);
  return { added: { entry: parsed.entry, type: parsed.kind, createdAt: iso(now) } };
}

/** Removes an entry from one list; false when that list does not hold it. */
export function removeEntry(db: Db, workspaceId: string, list: SpamList, entry: string): boolean {
  return db.prepare('DELETE FROM spam_lists WHERE workspace_id = ? AND list = ? AND entry = ?').run(workspaceId, list, entry).changes > 0;
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
export function matchSender(db: Db, workspaceId: string, address: string): ListMatch | null {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at < 1 || at === lower.length - 1) return null;
  const labels = lower.slice(at + 1).split('.');
  const candidates = [lower, ...labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'))];
  const rows = db
    .prepare('SELECT list, entry, kind FROM spam_lists WHERE workspace_id = ? AND entry IN (SELECT value FROM json_each(?))')
    .all(workspaceId, JSON.stringify(candidates)) as ListMatch[];
  if (!rows.length) return null;
  return rows.sort((a, b) => candidates.indexOf(a.entry) - candidates.indexOf(b.entry))[0]!;
}
