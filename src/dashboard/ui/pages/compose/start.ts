// What the composer starts from: a saved draft as it was, a reply or a forward as the box drafts it (quoted,
// threaded; a forward with the original's files), or an empty message; and the From it starts with (the last one sent from in this browser, or the only address).
import { api } from '../../api.ts';
import type { Me } from '../../session.ts';
import type { FileRow } from './files.tsx';

export interface Start {
  draftId?: string;
  replyTo?: string;
  forward?: string;
}
export interface Fields {
  from: string;
  to: string;
  cc: string;
  subject: string;
  text: string;
  in_reply_to?: string;
}
export interface Identities {
  addresses: string[];
  domains: string[];
}

export const lastFromKey = (me: Me) => `mailwright.from.${me.workspace.id}.${me.user.id}`;
/** The From a new message starts with: the last one sent from while it can still send, else the only address. */
export function defaultFrom(me: Me, ids: Identities | null): string {
  const last = localStorage.getItem(lastFromKey(me));
  const usable = (a: string) => ids !== null && (ids.addresses.includes(a) || ids.domains.includes(a.slice(a.lastIndexOf('@') + 1)));
  // The address itself, also when it was written with a name (Sales <sales@example.com>).
  if (last && usable((/<([^>]+)>/.exec(last)?.[1] ?? last).trim().toLowerCase())) return last;
  return ids?.addresses.length === 1 ? ids.addresses[0] : '';
}

/** Addresses as typed, separated by commas, semicolons or lines. */
export const list = (s: string) =>
  s
    .split(/[,;\n]/)
    .map((a) => a.trim())
    .filter(Boolean);
/** `made`: the draft was made for this opening (a reply or forward), so closing it untouched removes it. */
type Started = { fields: Fields; draftId: string | null; files: FileRow[]; made?: boolean };

/** A draft as the API shows it, in the composer's fields. */
function fromDraft(d: { id: string; from?: string; to?: string[]; cc?: string[]; subject?: string; text?: string; inReplyTo?: string; attachments: Array<{ id: string; filename: string; sizeBytes: number }> }): Started {
  return {
    draftId: d.id,
    fields: { from: d.from ?? '', to: (d.to ?? []).join(', '), cc: (d.cc ?? []).join(', '), subject: d.subject ?? '', text: d.text ?? '', in_reply_to: d.inReplyTo },
    files: d.attachments.map((a) => ({ id: a.id, name: a.filename, size: a.sizeBytes, progress: 1 })),
  };
}

export async function initial(start: Start): Promise<Started> {
  const empty: Fields = { from: '', to: '', cc: '', subject: '', text: '' };
  if (start.draftId) return fromDraft(await api(`/drafts/${start.draftId}`));
  // A reply or forward starts as the box drafts it (POST /emails/:id/reply or /forward with draft): from the inbox,
  // to Reply-To or From, quoted and threaded as the API would send it; a forward with the original's files.
  if (start.replyTo) return { ...fromDraft(await api(`/emails/${start.replyTo}/reply`, { body: { draft: true, text: '' } })), made: true };
  if (start.forward) return { ...fromDraft(await api(`/emails/${start.forward}/forward`, { body: { draft: true } })), made: true };
  return { fields: empty, draftId: null, files: [] };
}
