// Templates: the list (active and archived, searched), new templates from the starters, and a template's page:
// the draft editor saved as you type, a live preview rendered by the box with its findings, releases with
// their usage, test sends, publish, archive and restore. Paths: /templates, /templates/:id[/releases].
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Me } from '../../session.ts';
import { api, ApiError, qs } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loaded, Loading, toast } from '../../components/feedback.tsx';
import { CopyButton, Field, Form } from '../../components/forms.tsx';
import { when } from '../../components/format.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import { Page } from '../../components/page.tsx';
import { navigate, useLocation } from '../../router.ts';
import { Icon } from '../../icons.tsx';

type Lifecycle = 'active' | 'archived';
type VarType = 'string' | 'number' | 'boolean' | 'date' | 'url' | 'email';
type MessageClass = 'transactional' | 'marketing';

interface TemplateSummary {
  id: string;
  key: string;
  name: string;
  lifecycle: Lifecycle;
  activeVersionId: string | null;
  hasDraft: boolean;
  createdAt: string;
  updatedAt: string;
}
interface Variable {
  key: string;
  type: VarType;
  required: boolean;
}
interface Version {
  id: string;
  state: string;
  revision: number;
  number: number | null;
  name: string;
  subjectTemplate: string;
  htmlTemplate: string;
  textTemplate: string;
  variables: Variable[];
  sampleData: Record<string, unknown>;
  messageClass: MessageClass;
  publishedAt: string | null;
}
interface Release {
  id: string;
  state: string;
  number: number;
  name: string;
  subjectTemplate: string;
  publishedAt: string;
}
interface Detail {
  template: TemplateSummary;
  versions: Release[];
  draft: Version | null;
  activeVersion: Version | null;
  usage: Array<{ versionId: string; emails: number; lastSentAt: string | null }>;
}
interface Finding {
  severity: 'error' | 'warning' | 'info';
  code: string;
  message: string;
  variable?: string;
}
interface Rendered {
  subject: string;
  html: string;
  text: string;
  findings: Finding[];
  /** Findings past the 100 the box returns (errors are returned first). */
  findingsOmitted: number;
}

const TYPES: VarType[] = ['string', 'number', 'boolean', 'date', 'url', 'email'];
const STARTERS = [
  { id: 'welcome', title: 'Welcome', about: 'Greets a new user with a button to get started.' },
  { id: 'password-reset', title: 'Password reset', about: 'A one-time link that expires.' },
  { id: 'receipt', title: 'Receipt', about: 'A payment with its number, date and amount.' },
  { id: 'notification', title: 'Notification', about: 'A short update with one action.' },
  { id: 'blank', title: 'Blank', about: 'An empty draft to write from scratch.' },
] as const;
const SAVE_AFTER_MS = 600;

export function Templates({ me }: { me: Me }) {
  const { path } = useLocation();
  const [, , id, tab] = path.split('/');
  if (id) return <TemplatePage key={id} id={decodeURIComponent(id)} tab={tab === 'releases' ? 'releases' : 'editor'} me={me} />;
  return <TemplateList />;
}

// ─── The list ────────────────────────────────────────────────────────────────────────────────────────────

function TemplateList() {
  const { query } = useLocation();
  const lifecycle: Lifecycle = query.get('lifecycle') === 'archived' ? 'archived' : 'active';
  const search = query.get('query') ?? '';
  const [typed, setTyped] = useState(search);
  const [creating, setCreating] = useState(false);
  const list = useLoad(() => api<{ data: TemplateSummary[]; count: number }>(`/templates?${qs({ lifecycle, query: search })}`), [lifecycle, search]);
  const at = (l: Lifecycle, q: string) => {
    const s = qs({ lifecycle: l === 'archived' ? l : undefined, query: q.trim() });
    return `/templates${s ? `?${s}` : ''}`;
  };
  // The search follows typing after a pause, in the address so a reload or a link keeps it.
  useEffect(() => {
    if (typed.trim() === search) return;
    const t = setTimeout(() => navigate(at(lifecycle, typed), true), 250);
    return () => clearTimeout(t);
  }, [typed]);

  return (
    <Page
      title="Templates"
      actions={
        <button class="button primary" onClick={() => setCreating(true)}>
          New template
        </button>
      }
    >
      <div class="row" style={{ marginBottom: '12px', alignItems: 'flex-end' }}>
        <div class="tabs grow" role="tablist" style={{ marginBottom: 0 }}>
          <a href={at('active', search)} class={lifecycle === 'active' ? 'active' : ''} role="tab" aria-selected={lifecycle === 'active'}>
            Active
          </a>
          <a href={at('archived', search)} class={lifecycle === 'archived' ? 'active' : ''} role="tab" aria-selected={lifecycle === 'archived'}>
            Archived
          </a>
        </div>
        <input type="search" placeholder="Search by name or key" aria-label="Search templates" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} style={{ flex: '1 1 200px', maxWidth: '320px' }} />
      </div>
      <Loaded state={list}>
        {({ data }) =>
          data.length === 0 ? (
            search ? (
              <Empty title={`No ${lifecycle} template matches “${search}”`}>Search looks at names and keys.</Empty>
            ) : lifecycle === 'archived' ? (
              <Empty title="Nothing archived">Archived templates cannot be sent. Archive one from its page when it is no longer used; you can restore it later.</Empty>
            ) : (
              <Empty title="No templates yet">
                <p style={{ margin: '0 0 10px' }}>Start from a finished welcome, password reset, receipt or notification email, tested in the mail clients that matter, or from a blank page.</p>
                <button class="button primary" onClick={() => setCreating(true)}>
                  Create your first template
                </button>
              </Empty>
            )
          ) : (
            <table class="table" aria-label={`${lifecycle === 'archived' ? 'Archived' : 'Active'} templates`}>
              <thead>
                <tr>
                  <th>Template</th>
                  <th>Status</th>
                  <th>Changed</th>
                </tr>
              </thead>
              <tbody>
                {data.map((t) => (
                  <tr data-id={t.id}>
                    <td>
                      <a href={`/templates/${t.id}`} style={{ fontWeight: 600 }}>
                        {t.name}
                      </a>
                      <div class="mono muted">{t.key}</div>
                    </td>
                    <td>
                      <div class="row" style={{ gap: '4px' }}>
                        {t.lifecycle === 'archived' ? <Badge tone="warn">Archived</Badge> : t.activeVersionId ? <Badge tone="good">Live</Badge> : <Badge>Not published</Badge>}
                        {t.hasDraft && <Badge tone="info">Draft</Badge>}
                      </div>
                    </td>
                    <td class="muted">{when(t.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {creating && <NewTemplate onClose={() => setCreating(false)} />}
    </Page>
  );
}

const keyOf = (name: string) =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-._]+|-+$/g, '')
    .slice(0, 100);

function NewTemplate({ onClose }: { onClose: () => void }) {
  const [starter, setStarter] = useState<(typeof STARTERS)[number]['id']>('welcome');
  const [name, setName] = useState<string | null>(null);
  const [key, setKey] = useState<string | null>(null);
  // Until the user types their own, the name follows the starter and the key follows the name.
  const shownName = name ?? (starter === 'blank' ? '' : STARTERS.find((s) => s.id === starter)!.title);
  const shownKey = key ?? keyOf(shownName);
  return (
    <Modal title="New template" onClose={onClose}>
      <Form
        submit="Create template"
        class="form template-new"
        action={async () => {
          const made = await api<{ template: { id: string; key: string } }>('/templates', { body: { name: shownName.trim(), key: shownKey, starter } });
          toast(`Created ${made.template.key}`);
          navigate(`/templates/${made.template.id}`);
        }}
      >
        <fieldset style={{ border: 0, padding: 0, margin: 0 }}>
          <legend style={{ fontWeight: 550, fontSize: '13px', marginBottom: '6px' }}>Start from</legend>
          <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(140px, 1fr))', gap: '8px' }}>
            {STARTERS.map((s) => (
              <label
                style={{
                  display: 'grid',
                  gap: '2px',
                  alignContent: 'start',
                  padding: '10px 12px',
                  borderRadius: '8px',
                  cursor: 'pointer',
                  border: `1px solid ${starter === s.id ? 'var(--accent)' : 'var(--line)'}`,
                  background: starter === s.id ? 'var(--accent-soft)' : 'var(--panel)',
                }}
              >
                <span class="row" style={{ gap: '6px', flexWrap: 'nowrap' }}>
                  <input type="radio" name="starter" value={s.id} checked={starter === s.id} onChange={() => setStarter(s.id)} style={{ width: 'auto', margin: 0 }} />
                  <strong>{s.title}</strong>
                </span>
                <small class="muted">{s.about}</small>
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Name" hint="What your team sees in this list.">
          <input name="name" required maxLength={200} value={shownName} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Key" hint="What your code sends with: template: {key}. Letters, digits, dots, dashes and underscores.">
          <input name="key" class="mono" required maxLength={100} pattern="[A-Za-z0-9][A-Za-z0-9._\-]*" value={shownKey} onInput={(e) => setKey(e.currentTarget.value)} />
        </Field>
      </Form>
    </Modal>
  );
}

// ─── One template ────────────────────────────────────────────────────────────────────────────────────────

/** What the page's actions need from the editor: unsaved edits written first, and the sample data shown. */
interface EditorHandle {
  flush(): Promise<boolean>;
  data(): Record<string, unknown>;
  errors(): number;
}

function TemplatePage({ id, tab, me }: { id: string; tab: 'editor' | 'releases'; me: Me }) {
  const detail = useLoad(() => api<Detail>(`/templates/${encodeURIComponent(id)}`), [id]);
  const handle = useRef<EditorHandle | null>(null);
  const [dialog, setDialog] = useState<'publish' | 'test' | null>(null);
  const [busy, setBusy] = useState(false);
  const back = (
    <a href="/templates" class="muted" style={{ display: 'inline-block', marginBottom: '8px' }}>
      ← Templates
    </a>
  );
  if (detail.error)
    return (
      <Page title="Template">
        {back}
        <ErrorBox message={detail.error} retry={detail.reload} />
      </Page>
    );
  if (!detail.data)
    return (
      <Page title="Template">
        {back}
        <Loading label="Opening the template" />
      </Page>
    );
  const { template: t, draft, activeVersion, versions } = detail.data;
  const active = versions.find((v) => v.id === t.activeVersionId);
  const base = `/templates/${t.id}`;

  const lifecycle = async (to: 'archive' | 'restore') => {
    setBusy(true);
    try {
      if (to === 'archive' && handle.current) await handle.current.flush();
      await api(`${base}/${to}`, { method: 'POST', body: {} });
      toast(to === 'archive' ? `Archived ${t.key}: it can no longer be sent` : `Restored ${t.key}`);
      detail.reload();
    } catch (err) {
      toast(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Page
      title={t.name}
      actions={
        <>
          <button class="button" disabled={busy || t.lifecycle === 'archived'} onClick={() => setDialog('test')} title={t.lifecycle === 'archived' ? 'Restore the template to send it' : undefined}>
            Send test
          </button>
          {t.lifecycle === 'archived' ? (
            <button class="button" disabled={busy} onClick={() => lifecycle('restore')}>
              Restore
            </button>
          ) : (
            <button class="button" disabled={busy} onClick={() => lifecycle('archive')}>
              Archive
            </button>
          )}
          <button class="button primary" disabled={busy || !draft} onClick={() => setDialog('publish')} title={draft ? undefined : 'Start a draft to publish a new release'}>
            Publish
          </button>
        </>
      }
    >
      <div class="row" style={{ marginTop: '-12px', marginBottom: '14px', gap: '6px' }}>
        {back}
        <span class="grow" />
        <code class="muted">{t.key}</code>
        <CopyButton text={t.key} label="Copy key" />
        {t.lifecycle === 'archived' && <Badge tone="warn">Archived</Badge>}
        {active ? <Badge tone="good">{`Live: v${active.number}`}</Badge> : <Badge>Not published</Badge>}
        {draft && <Badge tone="info">Draft</Badge>}
      </div>
      {t.lifecycle === 'archived' && (
        <div class="card" role="status" style={{ marginBottom: '14px', borderColor: 'var(--warn)' }}>
          This template is archived: sends and test sends that name it are refused. Restore it to use it again.
        </div>
      )}
      <div class="tabs" role="tablist">
        <a href={base} class={tab === 'editor' ? 'active' : ''} role="tab" aria-selected={tab === 'editor'}>
          {draft ? 'Draft' : 'Content'}
        </a>
        <a href={`${base}/releases`} class={tab === 'releases' ? 'active' : ''} role="tab" aria-selected={tab === 'releases'}>
          Releases ({versions.length})
        </a>
      </div>
      {tab === 'releases' ? (
        <Releases detail={detail.data} />
      ) : draft ? (
        <Editor key={`${draft.id}:${draft.revision}`} templateId={t.id} version={draft} editable handle={handle} onReload={detail.reload} />
      ) : activeVersion ? (
        <>
          <div class="card row" style={{ marginBottom: '14px' }}>
            <span class="grow">
              <strong>{`v${activeVersion.number} is live.`}</strong> <span class="muted">Releases never change: to edit, start a draft from it. Sends keep using v{activeVersion.number} until you publish again.</span>
            </span>
            <StartDraft templateId={t.id} onDone={detail.reload} />
          </div>
          <Editor key={activeVersion.id} templateId={t.id} version={activeVersion} editable={false} handle={handle} onReload={detail.reload} />
        </>
      ) : (
        <Empty title="Nothing to show">This template has neither a draft nor a release.</Empty>
      )}
      {dialog === 'publish' && draft && (
        <PublishDialog
          template={t}
          next={(versions[0]?.number ?? 0) + 1}
          handle={handle}
          onClose={() => setDialog(null)}
          onDone={(n) => {
            setDialog(null);
            toast(`Published v${n}: sends with ${t.key} use it now`);
            navigate(`${base}/releases`);
            detail.reload();
          }}
        />
      )}
      {dialog === 'test' && <TestSend template={t} me={me} handle={handle} onClose={() => setDialog(null)} />}
    </Page>
  );
}

function StartDraft({ templateId, onDone }: { templateId: string; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  return (
    <button
      class="button primary"
      disabled={busy}
      onClick={async () => {
        setBusy(true);
        try {
          await api(`/templates/${templateId}/draft`, { method: 'POST', body: {} });
          toast('Draft started from the live release');
          onDone();
        } catch (err) {
          toast(messageOf(err));
          setBusy(false);
        }
      }}
    >
      {busy ? 'Starting…' : 'Start a draft'}
    </button>
  );
}

// ─── The editor and its preview ──────────────────────────────────────────────────────────────────────────

interface Fields {
  name: string;
  subjectTemplate: string;
  htmlTemplate: string;
  textTemplate: string;
  messageClass: MessageClass;
  variables: Variable[];
  /** As typed, by variable key; typed values are made at save and render time. */
  samples: Record<string, string>;
}
type SaveState = { state: 'saved' | 'pending' | 'saving' } | { state: 'error'; message: string } | { state: 'conflict'; message: string };

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

function Editor({ templateId, version, editable, handle, onReload }: { templateId: string; version: Version; editable: boolean; handle: { current: EditorHandle | null }; onReload: () => void }) {
  const [fields, setFields] = useState<Fields>(() => fieldsOf(version));
  const [save, setSave] = useState<SaveState>({ state: 'saved' });
  const [revision, setRevision] = useState(version.revision);
  const [preview, setPreview] = useState<{ data: Rendered | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
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

  const status =
    save.state === 'saving' ? 'Saving…' : save.state === 'pending' ? 'Unsaved changes' : save.state === 'saved' ? (editable ? `Saved · revision ${revision}` : 'Read only') : null;

  return (
    <div class="split" style={{ alignItems: 'start' }}>
      <div class="card" style={{ display: 'grid', gap: '14px', minWidth: 0 }}>
        <div class="row" style={{ justifyContent: 'space-between' }}>
          <h2 style={{ margin: 0 }}>{editable ? 'Draft' : `Release v${version.number}`}</h2>
          {status && (
            <span class="muted" role="status" aria-live="polite" data-testid="save-status">
              {save.state === 'saving' && <span class="spinner" aria-hidden="true" />} {status}
            </span>
          )}
        </div>
        {save.state === 'conflict' && (
          <div class="state error" role="alert" style={{ padding: '12px', justifyItems: 'start', textAlign: 'left' }}>
            <strong>Someone else changed this draft.</strong>
            <span>{save.message}. Your edits here are not saved.</span>
            <div class="row">
              <button class="button small primary" onClick={onReload}>
                Load their version
              </button>
              <button class="button small" onClick={overwrite}>
                Save mine over it
              </button>
            </div>
          </div>
        )}
        {save.state === 'error' && (
          <p class="form-error" role="alert">
            Not saved: {save.message}. The preview shows the last saved draft.
          </p>
        )}
        <div class="row" style={{ alignItems: 'flex-start' }}>
          <div style={{ flex: '2 1 220px' }}>
            <Field label="Name">
              <input name="name" value={fields.name} disabled={!editable} maxLength={200} onInput={(e) => edit({ name: e.currentTarget.value })} />
            </Field>
          </div>
          <div style={{ flex: '1 1 150px' }}>
            <Field label="Message class">
              <select value={fields.messageClass} disabled={!editable} onChange={(e) => edit({ messageClass: e.currentTarget.value as MessageClass })}>
                <option value="transactional">Transactional</option>
                <option value="marketing">Marketing</option>
              </select>
            </Field>
          </div>
        </div>
        <Field label="Subject" hint="{{variable_key}} puts a value in; it is the same in HTML, text and subject.">
          <input class="mono" name="subject" value={fields.subjectTemplate} disabled={!editable} maxLength={2000} spellcheck={false} onInput={(e) => edit({ subjectTemplate: e.currentTarget.value })} />
        </Field>
        <Field label="HTML">
          <textarea class="mono" name="html" rows={16} wrap="off" spellcheck={false} value={fields.htmlTemplate} disabled={!editable} onInput={(e) => edit({ htmlTemplate: e.currentTarget.value })} />
        </Field>
        <Field label="Text" hint="The plain part, for clients that do not show HTML and for spam filters.">
          <textarea class="mono" name="text" rows={8} spellcheck={false} value={fields.textTemplate} disabled={!editable} onInput={(e) => edit({ textTemplate: e.currentTarget.value })} />
        </Field>
        <Variables fields={fields} editable={editable} edit={edit} />
      </div>
      <Preview preview={preview} retry={render} />
    </div>
  );
}

function Variables({ fields, editable, edit }: { fields: Fields; editable: boolean; edit: (p: Partial<Fields>) => void }) {
  const change = (i: number, patch: Partial<Variable>) => {
    const variables = fields.variables.map((v, j) => (j === i ? { ...v, ...patch } : v));
    const samples = { ...fields.samples };
    // A renamed variable keeps its sample value.
    if (patch.key !== undefined && fields.variables[i].key in samples) {
      samples[patch.key] = samples[fields.variables[i].key];
      delete samples[fields.variables[i].key];
    }
    edit({ variables, samples });
  };
  return (
    <section aria-label="Variables and sample data">
      <div class="row" style={{ justifyContent: 'space-between', marginBottom: '6px' }}>
        <h3 style={{ margin: 0 }}>Variables and sample data</h3>
        {editable && (
          <button class="button small" type="button" onClick={() => edit({ variables: [...fields.variables, { key: '', type: 'string', required: false }] })}>
            Add variable
          </button>
        )}
      </div>
      <p class="muted" style={{ margin: '0 0 8px', fontSize: '13px' }}>
        Sends must give every required variable. Sample values fill the preview and test sends, never real sends.
      </p>
      {fields.variables.length === 0 ? (
        <div class="muted" style={{ padding: '10px 0' }}>
          No variables yet. {editable ? 'Add one, then write {{its_key}} where the value goes.' : ''}
        </div>
      ) : (
        <div style={{ display: 'grid', gap: '8px' }}>
          {fields.variables.map((v, i) => (
            <div class="row variable" style={{ gap: '6px', padding: '8px', border: '1px solid var(--line)', borderRadius: '8px' }} data-variable={v.key}>
              <input class="mono" aria-label="Key" placeholder="key" value={v.key} disabled={!editable} style={{ flex: '1 1 130px', width: 'auto' }} onInput={(e) => change(i, { key: e.currentTarget.value })} />
              <select aria-label="Type" value={v.type} disabled={!editable} style={{ flex: '0 0 104px', width: 'auto' }} onChange={(e) => change(i, { type: e.currentTarget.value as VarType })}>
                {TYPES.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
              <label class="row" style={{ gap: '4px', flex: '0 0 auto', fontSize: '13px' }}>
                <input type="checkbox" checked={v.required} disabled={!editable} onChange={(e) => change(i, { required: e.currentTarget.checked })} />
                Required
              </label>
              <SampleInput variable={v} value={fields.samples[v.key] ?? ''} editable={editable} onInput={(value) => edit({ samples: { ...fields.samples, [v.key]: value } })} />
              {editable && (
                <button class="icon" type="button" aria-label={`Remove ${v.key || 'this variable'}`} title="Remove" onClick={() => edit({ variables: fields.variables.filter((_, j) => j !== i) })}>
                  <Icon name="close" />
                </button>
              )}
            </div>
          ))}
        </div>
      )}
    </section>
  );
}

function SampleInput({ variable: v, value, editable, onInput }: { variable: Variable; value: string; editable: boolean; onInput: (value: string) => void }) {
  const common = { 'aria-label': `Sample ${v.key}`, disabled: !editable || !v.key, style: { flex: '2 1 180px', width: 'auto' } };
  if (v.type === 'boolean')
    return (
      <select {...common} value={value} onChange={(e) => onInput(e.currentTarget.value)}>
        <option value="">no sample</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  const hint: Record<VarType, string> = { string: 'sample value', number: '42', boolean: '', date: '2026-11-25', url: 'https://…', email: 'name@example.com' };
  return <input {...common} type={v.type === 'number' ? 'number' : 'text'} inputMode={v.type === 'number' ? 'decimal' : v.type === 'url' ? 'url' : v.type === 'email' ? 'email' : undefined} placeholder={hint[v.type]} value={value} onInput={(e) => onInput(e.currentTarget.value)} />;
}

const SEVERITY: Record<Finding['severity'], { rank: number; tone: 'bad' | 'warn' | 'info'; label: string }> = {
  error: { rank: 0, tone: 'bad', label: 'Error' },
  warning: { rank: 1, tone: 'warn', label: 'Warning' },
  info: { rank: 2, tone: 'info', label: 'Note' },
};

function Preview({ preview, retry }: { preview: { data: Rendered | null; error: string | null; loading: boolean }; retry: () => void }) {
  const [width, setWidth] = useState<'wide' | 'phone'>('wide');
  const r = preview.data;
  const findings = useMemo(() => (r ? [...r.findings].sort((a, b) => SEVERITY[a.severity].rank - SEVERITY[b.severity].rank) : []), [r]);
  return (
    <section class="card" aria-label="Preview" style={{ position: 'sticky', top: '16px', minWidth: 0, display: 'grid', gap: '12px' }}>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h2 style={{ margin: 0 }}>
          Preview {preview.loading && r && <span class="spinner" aria-label="Rendering" />}
        </h2>
        <div class="row" role="group" aria-label="Preview width" style={{ gap: '4px' }}>
          <button class={`button small ${width === 'wide' ? 'primary' : ''}`} aria-pressed={width === 'wide'} onClick={() => setWidth('wide')}>
            Wide
          </button>
          <button class={`button small ${width === 'phone' ? 'primary' : ''}`} aria-pressed={width === 'phone'} onClick={() => setWidth('phone')}>
            Phone
          </button>
        </div>
      </div>
      {preview.error && <ErrorBox message={`The box could not render the preview: ${preview.error}`} retry={retry} />}
      {!r ? (
        !preview.error && <Loading label="Rendering" />
      ) : (
        <>
          <div>
            <div class="muted" style={{ fontSize: '12px', textTransform: 'uppercase', letterSpacing: '.04em' }}>
              Subject
            </div>
            <div data-testid="preview-subject" style={{ fontWeight: 600, fontSize: '15px', wordBreak: 'break-word' }}>
              {r.subject || <span class="muted">(no subject)</span>}
            </div>
          </div>
          <div>
            <div class="muted" style={{ fontSize: '12px', textTransform: 'uppercase', letterSpacing: '.04em' }}>
              Checks
            </div>
            {findings.length === 0 ? (
              <p style={{ margin: '4px 0 0' }} data-testid="findings">
                <Badge tone="good">All clear</Badge> <span class="muted">It renders with the sample data and nothing looks risky.</span>
              </p>
            ) : (
              <ul class="findings" data-testid="findings" style={{ margin: '4px 0 0' }}>
                {findings.map((f) => (
                  <li data-severity={f.severity} data-code={f.code} class="row" style={{ gap: '8px', alignItems: 'baseline', flexWrap: 'nowrap' }}>
                    <Badge tone={SEVERITY[f.severity].tone}>{SEVERITY[f.severity].label}</Badge>
                    <span style={{ wordBreak: 'break-word' }}>{f.message}</span>
                  </li>
                ))}
                {r.findingsOmitted > 0 && (
                  <li class="muted" data-testid="findings-omitted">
                    and {r.findingsOmitted.toLocaleString()} more not shown
                  </li>
                )}
              </ul>
            )}
          </div>
          {r.html ? <HtmlFrame html={r.html} phone={width === 'phone'} /> : <Empty title="No HTML part">The email goes out as plain text.</Empty>}
          <details open={!r.html}>
            <summary style={{ cursor: 'pointer', fontWeight: 550 }}>Text part</summary>
            {r.text ? (
              <pre data-testid="preview-text" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word', background: 'var(--hover)', padding: '10px 12px', borderRadius: '8px', margin: '8px 0 0', maxHeight: '360px', overflow: 'auto' }}>
                {r.text}
              </pre>
            ) : (
              <p class="muted">No text part.</p>
            )}
          </details>
        </>
      )}
    </section>
  );
}

/**
 * The rendered HTML in a frame that runs nothing. A srcdoc frame inherits the dashboard's CSP, whose
 * style-src 'self' refuses every <style> element and style attribute, so an email would show unstyled (its
 * hidden preheader visible). The styles are therefore taken out of the markup and given back through the
 * CSSOM, which the CSP does not govern. That needs the frame's document: allow-same-origin without
 * allow-scripts keeps it script-free (sandboxed scripts never run, and the inherited CSP refuses inline ones).
 */
function HtmlFrame({ html, phone }: { html: string; phone: boolean }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const parts = useMemo(() => detachStyles(html), [html]);
  const remote = useMemo(() => /<img\b[^>]*\bsrc\s*=\s*["']?https?:/i.test(html), [html]);
  const fit = () => {
    const f = frame.current;
    const doc = f?.contentDocument;
    if (!f || !doc?.documentElement) return;
    f.style.height = '0px';
    f.style.height = `${Math.max(320, Math.min(4000, doc.documentElement.scrollHeight))}px`;
  };
  useEffect(() => {
    addEventListener('resize', fit);
    return () => removeEventListener('resize', fit);
  }, []);
  useEffect(fit, [phone]);
  return (
    <div>
      {remote && <p class="muted" style={{ margin: '0 0 6px', fontSize: '13px' }}>Remote images are not loaded in the preview.</p>}
      <div style={{ background: 'var(--hover)', borderRadius: '10px', display: 'flex', justifyContent: 'center' }}>
        <iframe
          ref={frame}
          class="preview-frame"
          title="HTML preview"
          sandbox="allow-same-origin"
          referrerpolicy="no-referrer"
          srcdoc={parts.doc}
          style={{ width: phone ? '375px' : '100%', maxWidth: '100%', minHeight: '320px', display: 'block' }}
          onLoad={() => {
            const doc = frame.current?.contentDocument;
            if (doc) attachStyles(doc, parts);
            fit();
          }}
        />
      </div>
    </div>
  );
}

const STYLE_MARK = 'data-mw-style';
// A start tag, quoted attribute values (which may hold a `>`) included.
const TAG = /<[a-zA-Z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>/g;

/**
 * The HTML with its styles set aside, by string rather than by parsing: any document made in the dashboard
 * (DOMParser, a template element) carries its CSP and reports every style attribute it meets.
 */
function detachStyles(html: string): { doc: string; sheets: string[] } {
  const sheets: string[] = [];
  const doc = html
    .replace(/<style\b[^>]*>([\s\S]*?)<\/style\s*>/gi, (_, css: string) => {
      sheets.push(css);
      return '';
    })
    // Renamed where it is an attribute; a quoted value is skipped whole, so "a style=b" inside one stays.
    .replace(TAG, (tag) => tag.replace(/(\s)style(?=\s*=)|"[^"]*"|'[^']*'/gi, (m, space: string | undefined) => (space === undefined ? m : `${space}${STYLE_MARK}`)));
  return { doc, sheets };
}

function attachStyles(doc: Document, parts: { sheets: string[] }) {
  const win = doc.defaultView;
  if (!win) return;
  if (parts.sheets.length) {
    try {
      // The sheet must come from the frame's own realm to be adopted there.
      const sheet = new win.CSSStyleSheet();
      sheet.replaceSync(parts.sheets.join('\n'));
      doc.adoptedStyleSheets = [sheet];
    } catch {
      // A sheet the browser cannot take shows the email without it, as a strict client would.
    }
  }
  doc.querySelectorAll(`[${STYLE_MARK}]`).forEach((el) => {
    (el as HTMLElement).style.cssText = el.getAttribute(STYLE_MARK) ?? '';
    el.removeAttribute(STYLE_MARK);
  });
}

// ─── Releases, publishing and test sends ────────────────────────────────────────────────────────────────

function Releases({ detail }: { detail: Detail }) {
  const { template: t, versions, usage } = detail;
  const [viewing, setViewing] = useState<Release | null>(null);
  const used = new Map(usage.map((u) => [u.versionId, u]));
  const example = JSON.stringify({ from: 'you@your-domain', to: 'someone@example.com', template: { key: t.key, data: Object.fromEntries((detail.activeVersion?.variables ?? []).map((v) => [v.key, `<${v.type}>`])) } }, null, 2);
  return (
    <div style={{ display: 'grid', gap: '16px' }}>
      {versions.length === 0 ? (
        <Empty title="Nothing published yet">Publish the draft to make v1. Sends always use the latest release, and a release never changes.</Empty>
      ) : (
        <table class="table" aria-label="Releases">
          <thead>
            <tr>
              <th>Release</th>
              <th>Sent</th>
              <th>Published</th>
              <th>Last sent</th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => {
              const u = used.get(v.id);
              return (
                <tr data-release={v.number}>
                  <td>
                    <div class="row" style={{ gap: '6px' }}>
                      <button class="button small" onClick={() => setViewing(v)} aria-label={`Show v${v.number}`}>
                        v{v.number}
                      </button>
                      {v.id === t.activeVersionId && <Badge tone="good">Live</Badge>}
                    </div>
                    <div class="muted mono" style={{ marginTop: '4px', wordBreak: 'break-word' }}>
                      {v.subjectTemplate || '(no subject)'}
                    </div>
                  </td>
                  <td>
                    <strong>{(u?.emails ?? 0).toLocaleString()}</strong> <span class="muted">{u?.emails === 1 ? 'email' : 'emails'}</span>
                  </td>
                  <td class="muted">{new Date(v.publishedAt).toLocaleString()}</td>
                  <td class="muted">{u?.lastSentAt ? when(u.lastSentAt) : 'Never'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {t.activeVersionId && (
        <div class="card">
          <div class="row" style={{ justifyContent: 'space-between', marginBottom: '8px' }}>
            <h2 style={{ margin: 0 }}>Send with it</h2>
            <CopyButton text={example} />
          </div>
          <p class="muted" style={{ margin: '0 0 8px' }}>
            <code>POST /api/v1/emails</code> with the template in place of <code>html</code> and <code>text</code>. Test sends are not counted here.
          </p>
          <pre style={{ margin: 0, overflowX: 'auto', background: 'var(--hover)', padding: '10px 12px', borderRadius: '8px' }}>{example}</pre>
        </div>
      )}
      {viewing && <ReleaseSource templateId={t.id} release={viewing} onClose={() => setViewing(null)} />}
    </div>
  );
}

function ReleaseSource({ templateId, release, onClose }: { templateId: string; release: Release; onClose: () => void }) {
  const v = useLoad(() => api<{ version: Version }>(`/templates/${templateId}/versions/${release.id}`), [release.id]);
  const block = { margin: '4px 0 12px', maxHeight: '260px', overflow: 'auto', background: 'var(--hover)', padding: '10px 12px', borderRadius: '8px', whiteSpace: 'pre-wrap', wordBreak: 'break-word' } as const;
  return (
    <Modal title={`v${release.number} · ${release.name}`} onClose={onClose}>
      <Loaded state={v}>
        {({ version }) => (
          <>
            <p class="muted" style={{ marginTop: 0 }}>
              Published {new Date(version.publishedAt!).toLocaleString()} · {version.messageClass} · {version.variables.length} variables
            </p>
            <strong>Subject</strong>
            <pre style={block}>{version.subjectTemplate}</pre>
            <strong>HTML</strong>
            <pre style={block}>{version.htmlTemplate || '(none)'}</pre>
            <strong>Text</strong>
            <pre style={block}>{version.textTemplate || '(none)'}</pre>
          </>
        )}
      </Loaded>
    </Modal>
  );
}

function PublishDialog({ template: t, next, handle, onClose, onDone }: { template: TemplateSummary; next: number; handle: { current: EditorHandle | null }; onClose: () => void; onDone: (n: number) => void }) {
  const errors = handle.current?.errors() ?? 0;
  return (
    <Modal title={`Publish v${next}`} onClose={onClose}>
      <Form
        submit={`Publish v${next}`}
        action={async () => {
          if (handle.current && !(await handle.current.flush())) throw new Error('The draft has changes that could not be saved: fix them in the editor first');
          const { version } = await api<{ version: { number: number } }>(`/templates/${t.id}/publish`, { method: 'POST', body: {} });
          onDone(version.number);
        }}
      >
        <p style={{ margin: 0 }}>
          The draft becomes <strong>v{next}</strong>, and every send that names <code>{t.key}</code> uses it from now on. A release never changes: to change it later, start a new draft.
        </p>
        {errors > 0 && (
          <p class="form-error" style={{ margin: 0 }}>
            The preview has {errors} {errors === 1 ? 'error' : 'errors'} with the sample data. Real sends have no sample data: a send missing a required variable is refused.
          </p>
        )}
      </Form>
    </Modal>
  );
}

function TestSend({ template: t, me, handle, onClose }: { template: TemplateSummary; me: Me; handle: { current: EditorHandle | null }; onClose: () => void }) {
  const identities = useLoad(() => api<{ domains: string[]; addresses: string[] }>('/sending-identities'), []);
  const [sent, setSent] = useState<{ id: string; to: string } | null>(null);
  const from = (ids: { domains: string[]; addresses: string[] }) => {
    const own = ids.addresses.filter((a) => ids.domains.includes(a.slice(a.lastIndexOf('@') + 1).toLowerCase()));
    return own[0] ?? (ids.domains[0] ? `test@${ids.domains[0]}` : '');
  };
  return (
    <Modal title="Send a test" onClose={onClose}>
      <Loaded state={identities}>
        {(ids) =>
          ids.domains.length === 0 ? (
            <Empty title="No verified sending domain">
              Test sends go out like real ones, so they need a domain you have verified. <a href="/domains">Add a domain</a>.
            </Empty>
          ) : sent ? (
            <div class="state" role="status">
              <strong style={{ color: 'var(--text)' }}>Test sent to {sent.to}</strong>
              <span>It is marked as a test and is not counted as a use of the release.</span>
              <div class="row">
                <a class="button small" href={`/mail/sent/${sent.id}`}>
                  Open it in Sent
                </a>
                <button class="button small" onClick={() => setSent(null)}>
                  Send another
                </button>
              </div>
            </div>
          ) : (
            <Form
              submit="Send test"
              action={async (form) => {
                if (handle.current && !(await handle.current.flush())) throw new Error('The draft has changes that could not be saved: fix them in the editor first');
                const to = String(form.get('to'))
                  .split(/[,;\s]+/)
                  .filter(Boolean);
                const res = await api<{ id: string }>(`/templates/${t.id}/test`, { body: { to, from: String(form.get('from')).trim(), data: handle.current?.data() ?? {} } });
                setSent({ id: res.id, to: to.join(', ') });
              }}
            >
              <p class="muted" style={{ margin: 0 }}>
                The draft (or the live release when there is none) with the sample data from the editor, through the normal send path.
              </p>
              <Field label="To" hint="Up to 5 addresses, separated by commas.">
                <input name="to" required defaultValue={me.user.email} />
              </Field>
              <Field label="From" hint={`On a verified domain: ${ids.domains.join(', ')}`}>
                <input name="from" required defaultValue={from(ids)} list="test-from" />
                <datalist id="test-from">
                  {ids.addresses.map((a) => (
                    <option value={a} />
                  ))}
                </datalist>
              </Field>
            </Form>
          )
        }
      </Loaded>
    </Modal>
  );
}
