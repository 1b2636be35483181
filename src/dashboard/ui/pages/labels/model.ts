// What the Labels pages read from the API (labels with their rules and counts, a dry run's answer), the colours
// offered, and the labels as a tree of their `/` names.
import type { Load } from '../../components/load.ts';

export interface Rule {
  id: string;
  labelId: string;
  direction: 'in' | 'out' | null;
  inboxId: string | null;
  from: string | null;
  to: string | null;
  subject: string | null;
  skipInbox: boolean;
}
export interface Label {
  id: string;
  name: string;
  color: string;
  skipInbox: boolean;
  totalCount: number;
  unreadCount: number;
  rules: Rule[];
}
export interface LabelList {
  data: Label[];
  count: number;
  mailbox: { resortPending: number };
}
/** The list as Labels loads it once for the tree and each label's page. */
export type LabelsState = Load<LabelList>;
export interface Inbox {
  id: string;
  address: string;
  name: string | null;
}
export interface DryRun {
  count: number;
  emails: Array<{ id: string; direction: 'in' | 'out'; from: string; subject: string; createdAt: string }>;
}

export const PALETTE = ['#2563eb', '#7c3aed', '#db2777', '#dc2626', '#ea580c', '#ca8a04', '#16a34a', '#0d9488', '#0891b2', '#64748b'];
export const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

export interface Node {
  path: string;
  leaf: string;
  depth: number;
  label?: Label;
}

/** Every label and every folder its name implies, parents first, siblings by name. */
export function tree(labels: Label[]): Node[] {
  const byName = new Map(labels.map((l) => [l.name.toLowerCase(), l]));
  const segs = (l: Label) => l.name.split('/');
  const sorted = [...labels].sort((a, b) => {
    const x = segs(a);
    const y = segs(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = x[i].localeCompare(y[i], undefined, { sensitivity: 'base', numeric: true });
      if (c) return c;
    }
    return x.length - y.length;
  });
  const seen = new Set<string>();
  const out: Node[] = [];
  for (const l of sorted) {
    const parts = segs(l);
    for (let i = 1; i <= parts.length; i++) {
      const path = parts.slice(0, i).join('/');
      if (seen.has(path.toLowerCase())) continue;
      seen.add(path.toLowerCase());
      out.push({ path, leaf: parts[i - 1], depth: i - 1, label: byName.get(path.toLowerCase()) });
    }
  }
  return out;
}
