// The composer: a draft saved as you type (the drafts API), files uploaded with progress and the limits shown
// first (files.tsx), sent now or at a time; a reply or forward starts from the box's draft of it (start.ts).
// From starts as the address last sent from in this browser (per workspace and user), or the workspace's only
// sending address.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { messageOf } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import type { Me } from '../../session.ts';
import { attach, Files, MAX_FILES, type FileRow } from './files.tsx';
import { defaultFrom, initial, lastFromKey, list, type Fields, type Identities, type Start } from './start.ts';

const SAVE_AFTER_MS = 700;

let show: ((s: Start | null) => void) | null = null;
export const openCompose = (s: Start) => show?.(s);

/** Where the composer lives: one at a time, over whatever page is open. */
export function ComposeHost({ me }: { me: Me }) {
  const [start, setStart] = useState<Start | null>(null);
  show = setStart;
  return start ? <Composer key={JSON.stringify(start)} start={start} me={me} onClose={() => setStart(null)} /> : null;
}

function Composer({ start, me, onClose }: { start: Start; me: Me; onClose: () => void }) {
  const [fields, setFields] = useState<Fields | null>(null);
  const [files, setFiles] = useState<FileRow[]>([]);
  const [status, setStatus] = useState('');
  const [when, setWhen] = useState('');
  const [busy, setBusy] = useState(false);
  const [identities, setIdentities] = useState<string[]>([]);
  const draftId = useRef<string | null>(null);
  // A reply's or forward's draft is made on opening: closed before anything changed, it goes again.
  const made = useRef(false);
  const pristine = useRef(true);
  const timer = useRef<number | undefined>(undefined);
  const toField = useRef<HTMLInputElement>(null);
  const textField = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    const known = api<Identities>('/sending-identities').catch(() => null);
    void known.then((s) => s && setIdentities([...s.addresses, ...s.domains.map((d) => `you@${d}`)]));
    initial(start).then(
      async (i) => {
        draftId.current = i.draftId;
        made.current = i.made === true;
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
    pristine.current = false;
    const next = { ...fields!, ...patch };
    setFields(next);
    setStatus('Saving…');
    clearTimeout(timer.current);
    timer.current = window.setTimeout(() => void save(next).catch(() => {}), SAVE_AFTER_MS);
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
  const close = () => {
    if (made.current && pristine.current && draftId.current) void api(`/drafts/${draftId.current}`, { method: 'DELETE' }).catch(() => {});
    onClose();
  };
  const discard = async () => {
    clearTimeout(timer.current);
    if (draftId.current) await api(`/drafts/${draftId.current}`, { method: 'DELETE' }).catch(() => {});
    onClose();
  };

  return (
    <Modal title={start.replyTo ? 'Reply' : start.forward ? 'Forward' : 'New message'} onClose={close}>
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
              <input type="file" multiple hidden onChange={(e) => fields && e.currentTarget.files && ((pristine.current = false), attach(e.currentTarget.files, files, setFiles, () => save(fields)))} />
            </label>
            <span class="muted">Up to {MAX_FILES} files, 10 MB in all</span>
          </div>
          <Files files={files} setFiles={setFiles} />
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
