// The composer: a draft saved as you type (the drafts API), files uploaded with progress and the limits shown
// first, sent now or at a time; reply and forward start from a message with its text quoted. From starts as the
// address last sent from in this browser (per workspace and user), or the workspace's only sending address.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, upload } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { bytes } from '../../components/format.tsx';
import { messageOf } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import type { Me } from '../../session.ts';
import { Icon } from '../../icons.tsx';

const MAX_FILES = 10;
const MAX_BYTES = 10 * 1000 * 1000;
const SAVE_AFTER_MS = 700;

interface Start {
  draftId?: string;
  replyTo?: string;
  forward?: string;
}
interface Fields {
  from: string;
  to: string;
  cc: string;
  subject: string;
  text: string;
  in_reply_to?: string;
}
interface FileRow {
  id?: string;
  name: string;
  size: number;
  progress: number;
  error?: string;
}

let show: ((s: Start | null) => void) | null = null;
export const openCompose = (s: Start) => show?.(s);

/** Where the composer lives: one at a time, over whatever page is open. */
export function ComposeHost({ me }: { me: Me }) {
  const [start, setStart] = useState<Start | null>(null);
  show = setStart;
  return start ? <Composer key={JSON.stringify(start)} start={start} me={me} onClose={() => setStart(null)} /> : null;
}

interface Identities {
  addresses: string[];
  domains: string[];
}
const lastFromKey = (me: Me) => `mailwright.from.${me.workspace.id}.${me.user.id}`;
/** The From a new message starts with: the last one sent from while it can still send, else the only address. */
function defaultFrom(me: Me, ids: Identities | null): string {
  const last = localStorage.getItem(lastFromKey(me));
  const usable = (a: string) => ids !== null && (ids.addresses.includes(a) || ids.domains.includes(a.slice(a.lastIndexOf('@') + 1)));
  // The address itself, also when it was written with a name (Sales <sales@example.com>).
  if (last && usable((/<([^>]+)>/.exec(last)?.[1] ?? last).trim().toLowerCase())) return last;
  return ids?.addresses.length === 1 ? ids.addresses[0] : '';
}

const list = (s: string) =>
  s
    .split(/[,;\n]/)
    .map((a) => a.trim())
    .filter(Boolean);
const quote = (text: string) =>
  text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

async function initial(start: Start): Promise<{ fields: Fields; draftId: string | null; files: FileRow[] }> {
  const empty: Fields = { from: '', to: '', cc: '', subject: '', text: '' };
  if (start.draftId) {
    const d = await api(`/drafts/${start.draftId}`);
    return {
      draftId: d.id,
      fields: { from: d.from ?? '', to: (d.to ?? []).join(', '), cc: (d.cc ?? []).join(', '), subject: d.subject ?? '', text: d.text ?? '', in_reply_to: d.inReplyTo },
      files: d.attachments.map((a: { id: string; filename: string; sizeBytes: number }) => ({ id: a.id, name: a.filename, size: a.sizeBytes, progress: 1 })),
    };
  }
  const id = start.replyTo ?? start.forward;
  if (!id) return { fields: empty, draftId: null, files: [] };
  const e = await api(`/emails/${id}`);
  const said = `On ${new Date(e.createdAt).toLocaleString()}, ${e.from.name ? `${e.from.name} <${e.from.address}>` : e.from.address} wrote:\n${quote(e.text ?? '')}`;
  const mine = e.direction === 'in' ? (e.to[0]?.address ?? '') : e.from.address;
  if (start.replyTo) {
    return { draftId: null, files: [], fields: { ...empty, from: mine, to: e.direction === 'in' ? e.from.address : e.to.map((p: { address: string }) => p.address).join(', '), subject: /^re:/i.test(e.subject) ? e.subject : `Re: ${e.subject}`, text: `\n\n${said}`, in_reply_to: e.id } };
  }
  const header = `---------- Forwarded message ----------\nFrom: ${e.from.address}\nDate: ${new Date(e.createdAt).toUTCString()}\nSubject: ${e.subject}\nTo: ${e.to.map((p: { address: string }) => p.address).join(', ')}\n\n${e.text ?? ''}`;
  return { draftId: null, files: [], fields: { ...empty, from: mine, subject: /^fwd?:/i.test(e.subject) ? e.subject : `Fwd: ${e.subject}`, text: `\n\n${header}` } };
}

function Composer({ start, me, onClose }: { start: Start; me: Me; onClose: () => void }) {
  const [fields, setFields] = useState<Fields | null>(null);
  const [files, setFiles] = useState<FileRow[]>([]);
  const [status, setStatus] = useState('');
  const [when, setWhen] = useState('');
  const [busy, setBusy] = useState(false);
  const [identities, setIdentities] = useState<string[]>([]);
  const draftId = useRef<string | null>(null);
  const timer = useRef<number | undefined>(undefined);
  const toField = useRef<HTMLInputElement>(null);
  const textField = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    const known = api<Identities>('/sending-identities').catch(() => null);
    void known.then((s) => s && setIdentities([...s.addresses, ...s.domains.map((d) => `you@${d}`)]));
    initial(start).then(
      async (i) => {
        draftId.current = i.draftId;
        // A saved draft keeps what it has; a new message, reply or forward without a From gets the usual one.
        setFields(i.fields.from || start.draftId ? i.fields : { ...i.fields, from: defaultFrom(me, await known) });
        setFiles(i.files);
      },
      (err) => setStatus(messageOf(err)),
    );
  }, []);
  // Once the fields are there, typing starts where it is wanted: To when empty, else the message.
  const ready = fields !== null;
  useEffect(() => {
    if (!ready) return;
    if (fields.to) {
      textField.current?.focus();
      textField.current?.setSelectionRange(0, 0);
    } else toField.current?.focus();
  }, [ready]);

  /** The draft's body from the fields; a field the API refuses is left out, so the rest is still saved. */
  const save = async (f: Fields, omit: Set<string> = new Set()): Promise<string> => {
    const body: Record<string, unknown> = { from: f.from.trim() || undefined, to: list(f.to), cc: list(f.cc), subject: f.subject, text: f.text, in_reply_to: f.in_reply_to };
    for (const k of omit) delete body[k];
    try {
      if (draftId.current) await api(`/drafts/${draftId.current}`, { method: 'PUT', body });
      else draftId.current = (await api('/drafts', { body })).id;
      setStatus(omit.size ? `Saved, except ${[...omit].join(', ')} (not valid yet)` : 'Saved');
      return draftId.current!;
    } catch (err) {
      const field = err instanceof ApiError && err.status === 400 ? String(err.body?.error?.errors?.[0]?.path ?? '').split('.')[0] : '';
      if (field && field in body && !omit.has(field)) return save(f, new Set([...omit, field]));
      setStatus(`Not saved: ${messageOf(err)}`);
      throw err;
    }
  };
  const change = (patch: Partial<Fields>) => {
    const next = { ...fields!, ...patch };
    setFields(next);
    setStatus('Saving…');
    clearTimeout(timer.current);
    timer.current = window.setTimeout(() => void save(next).catch(() => {}), SAVE_AFTER_MS);
  };

  const attach = async (chosen: FileList | null) => {
    if (!chosen || !fields) return;
    const used = files.reduce((n, f) => n + (f.error ? 0 : f.size), 0);
    let room = MAX_BYTES - used;
    for (const file of Array.from(chosen)) {
      if (files.filter((f) => !f.error).length >= MAX_FILES) {
        toast(`At most ${MAX_FILES} files per message`);
        break;
      }
      if (file.size > room) {
        toast(`${file.name} (${bytes(file.size)}) does not fit: ${bytes(Math.max(0, room))} of 10 MB left`);
        continue;
      }
      room -= file.size;
      const row: FileRow = { name: file.name, size: file.size, progress: 0 };
      setFiles((fs) => [...fs, row]);
      const id = await save(fields);
      try {
        const done = await upload(`/drafts/${id}/attachments`, file, (p) => setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { progress: p }) : f))));
        setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { id: done.id, progress: 1 }) : f)));
      } catch (err) {
        setFiles((fs) => fs.map((f) => (f === row ? Object.assign(row, { error: messageOf(err) }) : f)));
      }
    }
  };

  const send = async () => {
    if (!fields) return;
    setBusy(true);
    clearTimeout(timer.current);
    try {
      const id = await save(fields);
      const body = when ? { scheduled_at: new Date(when).toISOString() } : {};
      await api(`/drafts/${id}/send`, { body });
      if (fields.from.trim()) localStorage.setItem(lastFromKey(me), fields.from.trim());
      toast(when ? `Scheduled for ${new Date(when).toLocaleString()}` : 'Sent');
      onClose();
    } catch (err) {
      setStatus(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const discard = async () => {
    clearTimeout(timer.current);
    if (draftId.current) await api(`/drafts/${draftId.current}`, { method: 'DELETE' }).catch(() => {});
    onClose();
  };

  return (
    <Modal title={start.replyTo ? 'Reply' : start.forward ? 'Forward' : 'New message'} onClose={onClose}>
      {!fields ? (
        <p class="muted">{status || 'Opening…'}</p>
      ) : (
        <div class="compose">
          <label class="line">
            <span>From</span>
            <input name="from" list="identities" value={fields.from} onInput={(e) => change({ from: e.currentTarget.value })} placeholder="you@your-domain" />
          </label>
          <datalist id="identities">
            {identities.map((a) => (
              <option value={a} />
            ))}
          </datalist>
          <label class="line">
            <span>To</span>
            <input ref={toField} name="to" value={fields.to} onInput={(e) => change({ to: e.currentTarget.value })} placeholder="Addresses, separated by commas" />
          </label>
          <label class="line">
            <span>Cc</span>
            <input name="cc" value={fields.cc} onInput={(e) => change({ cc: e.currentTarget.value })} />
          </label>
          <label class="line">
            <span>Subject</span>
            <input name="subject" value={fields.subject} onInput={(e) => change({ subject: e.currentTarget.value })} />
          </label>
          <textarea ref={textField} name="text" aria-label="Message" rows={12} value={fields.text} onInput={(e) => change({ text: e.currentTarget.value })} />
          <div class="row">
            <label class="button small">
              Attach files
              <input type="file" multiple hidden onChange={(e) => attach(e.currentTarget.files)} />
            </label>
            <span class="muted">Up to {MAX_FILES} files, 10 MB in all</span>
          </div>
          {files.map((f) => (
            <div class="row" data-testid="attachment">
              <span class="grow">
                <Icon name="paperclip" /> {f.name} <span class="muted">{bytes(f.size)}</span> {f.error && <span class="form-error">{f.error}</span>}
              </span>
              {f.progress < 1 && !f.error ? (
                <div class="progress" style={{ width: '120px' }}>
                  <div style={{ width: `${Math.round(f.progress * 100)}%` }} />
                </div>
              ) : (
                f.id && (
                  <button
                    class="button small"
                    onClick={async () => {
                      await api(`/attachments/${f.id}`, { method: 'DELETE' }).catch(() => {});
                      setFiles((fs) => fs.filter((x) => x !== f));
                    }}
                  >
                    Remove
                  </button>
                )
              )}
            </div>
          ))}
          <div class="row">
            <button class="button primary" onClick={send} disabled={busy || files.some((f) => f.progress < 1 && !f.error)}>
              {when ? 'Schedule' : 'Send'}
            </button>
            <label class="row muted">
              Send later
              <input type="datetime-local" name="when" value={when} onInput={(e) => setWhen(e.currentTarget.value)} style={{ width: 'auto' }} />
            </label>
            <span class="grow" />
            <span class="muted" role="status">
              {status}
            </span>
            <button class="button small danger" onClick={discard}>
              Discard
            </button>
          </div>
        </div>
      )}
    </Modal>
  );
}
