// The editor's state and its talk with the box: the fields as typed, saved after a pause one save after another
// (each needs the revision the previous one answered), a conflict when someone else saved meanwhile, and the
// box's render of the saved draft as the preview. Nothing typed is lost by leaving the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../../api.ts';
import { toast } from '../../components/feedback.tsx';
import { messageOf } from '../../components/load.ts';
import type { Detail, Handle, MessageClass, Rendered, Variable, Version } from './model.ts';

const SAVE_AFTER_MS = 600;

export interface Fields {
  name: string;
  subjectTemplate: string;
  htmlTemplate: string;
  textTemplate: string;
  messageClass: MessageClass;
  variables: Variable[];
  /** As typed, by variable key; typed values are made at save and render time. */
  samples: Record<string, string>;
}
export type SaveState = { state: 'saved' | 'pending' | 'saving' } | { state: 'error'; message: string } | { state: 'conflict'; message: string };
export type PreviewState = { data: Rendered | null; error: string | null; loading: boolean };

const fieldsOf = (v: Version): Fields => ({
  name: v.name,
  subjectTemplate: v.subjectTemplate,
  htmlTemplate: v.htmlTemplate,
  textTemplate: v.textTemplate,
  messageClass: v.messageClass,
  variables: v.variables.map((x) => ({ ...x })),
  samples: Object.fromEntries(Object.entries(v.sampleData ?? {}).map(([k, x]) => [k, x === null || x === undefined ? '' : String(x)])),
});

/** The sample data as the API takes it: each value in its variable's type, empty ones left out. */
function sampleData(f: Fields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of f.variables) {
    const raw = f.samples[v.key];
    if (!v.key || raw === undefined || raw.trim() === '') continue;
    if (v.type === 'number' && raw.trim() !== '' && Number.isFinite(Number(raw))) out[v.key] = Number(raw);
    else if (v.type === 'boolean' && (raw === 'true' || raw === 'false')) out[v.key] = raw === 'true';
    else out[v.key] = raw;
  }
  return out;
}

/** The draft being edited (or a release shown, `editable` false); `handle` is set for the page's actions. */
export function useDraft(templateId: string, version: Version, editable: boolean, handle: Handle) {
  const [fields, setFields] = useState<Fields>(() => fieldsOf(version));
  const [save, setSave] = useState<SaveState>({ state: 'saved' });
  const [revision, setRevision] = useState(version.revision);
  const [preview, setPreview] = useState<PreviewState>({ data: null, error: null, loading: true });
  const current = useRef({ fields, revision: version.revision, dirty: false, blocked: false });
  const queue = useRef<Promise<boolean>>(Promise.resolve(true));
  const renders = useRef(0);
  current.current.fields = fields;

  const render = async () => {
    const n = ++renders.current;
    setPreview((p) => ({ ...p, loading: true }));
    try {
      const data = await api<Rendered>(`/templates/${templateId}/render`, { body: { data: sampleData(current.current.fields) } });
      if (n === renders.current) setPreview({ data, error: null, loading: false });
    } catch (err) {
      if (n === renders.current) setPreview((p) => ({ data: p.data, error: messageOf(err), loading: false }));
    }
  };

  // Saves run one after another: each needs the revision the previous one answered.
  const saveNow = () =>
    (queue.current = queue.current.then(async () => {
      const c = current.current;
      if (!c.dirty) return true;
      if (c.blocked) return false;
      c.dirty = false;
      setSave({ state: 'saving' });
      const f = c.fields;
      try {
        const answer = await api<{ draft: { revision: number } }>(`/templates/${templateId}/draft`, {
          method: 'PUT',
          body: {
            revision: c.revision,
            name: f.name.trim() || version.name,
            subjectTemplate: f.subjectTemplate,
            htmlTemplate: f.htmlTemplate,
            textTemplate: f.textTemplate,
            messageClass: f.messageClass,
            // A row still without a key is one being typed: it is saved once it has one.
            variables: f.variables.filter((v) => v.key.trim()).map((v) => ({ ...v, key: v.key.trim() })),
            sampleData: sampleData(f),
          },
        });
        c.revision = answer.draft.revision;
        setRevision(c.revision);
        setSave(c.dirty ? { state: 'pending' } : { state: 'saved' });
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'revision_conflict') {
          c.blocked = true;
          setSave({ state: 'conflict', message: err.message });
        } else {
          c.dirty = true;
          const fieldErrors: Array<{ path: string; message: string }> = err instanceof ApiError ? (err.body?.errors ?? []) : [];
          setSave({ state: 'error', message: fieldErrors.length ? fieldErrors.map((e) => `${e.path}: ${e.message}`).join('; ') : messageOf(err) });
        }
        return false;
      }
    }));

  const edit = (patch: Partial<Fields>) => {
    if (!editable) return;
    current.current.dirty = true;
    setFields((f) => ({ ...f, ...patch }));
    if (!current.current.blocked) setSave({ state: 'pending' });
  };

  // Typing pauses, then the draft is saved and the box renders it: the preview is what a send would be.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      void render();
      return;
    }
    const t = setTimeout(async () => {
      if (editable && current.current.dirty) await saveNow();
      await render();
    }, SAVE_AFTER_MS);
    return () => clearTimeout(t);
  }, [fields]);

  // Unsaved edits are not lost by closing the tab or leaving the page.
  useEffect(() => {
    const warn = (e: BeforeUnloadEvent) => {
      if (current.current.dirty) e.preventDefault();
    };
    addEventListener('beforeunload', warn);
    return () => {
      removeEventListener('beforeunload', warn);
      if (current.current.dirty && !current.current.blocked) void saveNow();
    };
  }, []);

  handle.current = {
    flush: async () => (editable ? saveNow() : true),
    data: () => sampleData(current.current.fields),
    errors: () => preview.data?.findings.filter((f) => f.severity === 'error').length ?? 0,
  };

  /** After a conflict: this editor's fields saved over the other version. */
  const overwrite = async () => {
    try {
      const fresh = await api<Detail>(`/templates/${templateId}`);
      if (!fresh.draft) {
        setSave({ state: 'conflict', message: 'The draft was published or removed meanwhile: reload to see the template as it is now.' });
        return;
      }
      current.current.revision = fresh.draft.revision;
      current.current.blocked = false;
      current.current.dirty = true;
      if (await saveNow()) {
        toast('Your version is saved over the other one');
        void render();
      }
    } catch (err) {
      toast(messageOf(err));
    }
  };

  return { fields, edit, save, revision, preview, render, overwrite };
}
