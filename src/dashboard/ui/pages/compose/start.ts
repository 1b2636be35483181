// What the composer starts from: a saved draft as it was, a reply with the message quoted, a forward as the box
// drafts it (the forwarded block and the original's files), or an empty message; and the From it starts with (the last one sent from in this browser, or the only address).
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
const quote = (text: string) =>
  text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

type Started = { fields: Fields; draftId: string | null; files: FileRow[] };

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
  // The box writes the forwarded block and puts the original's files on a new draft (POST /emails/:id/forward).
  if (start.forward) return fromDraft(await api(`/emails/${start.forward}/forward`, { body: { draft: true } }));
  if (!start.replyTo) return { fields: empty, draftId: null, files: [] };
  const e = await api(`/emails/${start.replyTo}`);
  const said = `On ${new Date(e.createdAt).toLocaleString()}, ${e.from.name ? `${e.from.name} <${e.from.address}>` : e.from.address} wrote:\n${quote(e.text ?? '')}`;
  const mine = e.direction === 'in' ? (e.to[0]?.address ?? '') : e.from.address;
  return { draftId: null, files: [], fields: { ...empty, from: mine, to: e.direction === 'in' ? e.from.address : e.to.map((p: { address: string }) => p.address).join(', '), subject: /^re:/i.test(e.subject) ? e.subject : `Re: ${e.subject}`, text: `\n\n${said}`, in_reply_to: e.id } };
}
