// Labels and filing rules: the labels as a tree of their `/` names with colours, counts and the bucket mark;
// creating, renaming, recolouring, the bucket switch and deleting; a label's rules, each new one tried against
// stored mail (a dry run) before it is saved. Paths: /labels and /labels/:id.
import { useEffect, useState } from 'preact/hooks';
import type { Me } from '../../session.ts';
import { api } from '../../api.ts';
import { Badge, Empty, ErrorBox, Loading, toast } from '../../components/feedback.tsx';
import { Field, Form } from '../../components/forms.tsx';
import { when } from '../../components/format.tsx';
import { messageOf, useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import { Page } from '../../components/page.tsx';
import { navigate, useLocation } from '../../router.ts';
import { Icon } from '../../icons.tsx';

interface Rule {
  id: string;
  labelId: string;
  direction: 'in' | 'out' | null;
  inboxId: string | null;
  from: string | null;
  to: string | null;
  subject: string | null;
  skipInbox: boolean;
}
interface Label {
  id: string;
  name: string;
  color: string;
  skipInbox: boolean;
  totalCount: number;
  unreadCount: number;
  rules: Rule[];
}
interface LabelList {
  data: Label[];
  count: number;
  mailbox: { resortPending: number };
}
interface Inbox {
  id: string;
  address: string;
  name: string | null;
}
interface DryRun {
  count: number;
  emails: Array<{ id: string; direction: 'in' | 'out'; from: string; subject: string; createdAt: string }>;
}

const PALETTE = ['#2563eb', '#7c3aed', '#db2777', '#dc2626', '#ea580c', '#ca8a04', '#16a34a', '#0d9488', '#0891b2', '#64748b'];
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

export function Labels(_: { me: Me }) {
  const { path } = useLocation();
  const id = path.split('/')[2];
  const labels = useLoad(() => api<LabelList>('/labels'), []);
  const pending = labels.data?.mailbox.resortPending ?? 0;
  // While stored mail is being filed in the background, the counts move: follow them until it is done.
  useEffect(() => {
    if (!pending) return;
    const t = setTimeout(labels.reload, 2000);
    return () => clearTimeout(t);
  }, [labels.data]);

  if (id) return <LabelPage id={decodeURIComponent(id)} labels={labels} />;
  return <LabelTree labels={labels} />;
}

type LabelsState = ReturnType<typeof useLoad<LabelList>>;

function Filing({ pending }: { pending: number }) {
  if (!pending) return null;
  return (
    <div class="card row" role="status" style={{ marginBottom: '14px', padding: '10px 14px' }}>
      <span class="spinner" aria-hidden="true" />
      <span>Filing {plural(pending, 'stored email')} in the background. Counts update as it goes.</span>
    </div>
  );
}

// ─── The list ────────────────────────────────────────────────────────────────────────────────────────────

interface Node {
  path: string;
  leaf: string;
  depth: number;
  label?: Label;
}

/** Every label and every folder its name implies, parents first, siblings by name. */
function tree(labels: Label[]): Node[] {
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

function LabelTree({ labels }: { labels: LabelsState }) {
  const [creating, setCreating] = useState(false);
  useEffect(() => void (document.title = 'Labels · Mailwright'), []);
  const newButton = (
    <button class="button primary" onClick={() => setCreating(true)}>
      New label
    </button>
  );
  return (
    <Page title="Labels and rules" actions={newButton}>
      <p class="muted" style={{ margin: '-8px 0 16px' }}>
        Labels sort mail into folders; rules put new mail in them as it arrives or leaves. A bucket label keeps its mail out of the Inbox.
      </p>
      {labels.error ? (
        <ErrorBox message={labels.error} retry={labels.reload} />
      ) : !labels.data ? (
        <Loading label="Loading labels" />
      ) : labels.data.data.length === 0 ? (
        <Empty title="No labels yet">
          <p style={{ margin: '0 0 10px' }}>
            Make one for a client, a project or receipts, then add a rule so matching mail files itself. Use <code>/</code> to nest: <code>Clients/Acme</code>.
          </p>
          <button class="button primary" onClick={() => setCreating(true)}>
            Create a label
          </button>
        </Empty>
      ) : (
        <>
          <Filing pending={labels.data.mailbox.resortPending} />
          <div class="card" role="list" aria-label="Labels" style={{ padding: 0, overflow: 'hidden' }}>
            {tree(labels.data.data).map((n, i) => {
              const l = n.label;
              const indent = { paddingLeft: `${16 + n.depth * 22}px`, borderTop: i ? '1px solid var(--line)' : '0' };
              if (!l)
                return (
                  <div role="listitem" class="row muted" style={{ padding: '10px 16px', ...indent }}>
                    <Icon name="chevronRight" /> {n.leaf}
                    <small>(folder)</small>
                  </div>
                );
              return (
                <a role="listitem" href={`/labels/${l.id}`} data-label={l.name} class="row" style={{ padding: '10px 16px', ...indent, color: 'var(--text)', textDecoration: 'none', gap: '8px' }}>
                  <span class="label-dot" style={{ background: l.color, margin: 0, flex: '0 0 auto' }} />
                  <span class="grow" style={{ minWidth: '120px' }}>
                    <strong style={{ fontWeight: 600 }} title={l.name}>
                      {n.leaf}
                    </strong>
                  </span>
                  {l.skipInbox && (
                    <span title="Its received mail skips the Inbox">
                      <Badge tone="info">Bucket</Badge>
                    </span>
                  )}
                  {l.rules.length > 0 && <span class="muted" style={{ fontSize: '13px' }}>{plural(l.rules.length, 'rule')}</span>}
                  <span class="muted" style={{ fontSize: '13px', minWidth: '76px', textAlign: 'right' }}>
                    {plural(l.totalCount, 'email')}
                  </span>
                  {l.unreadCount > 0 ? <Badge tone="info">{`${l.unreadCount} unread`}</Badge> : null}
                </a>
              );
            })}
          </div>
        </>
      )}
      {creating && (
        <NewLabel
          onClose={() => setCreating(false)}
          onDone={(made) => {
            setCreating(false);
            labels.reload();
            navigate(`/labels/${made.id}`);
          }}
        />
      )}
    </Page>
  );
}

function ColorPicker({ value, onChange, auto }: { value: string | null; onChange: (c: string | null) => void; auto?: boolean }) {
  const swatch = (selected: boolean) => ({ width: '26px', height: '26px', borderRadius: '50%', cursor: 'pointer', padding: 0, border: '2px solid var(--panel)', boxShadow: selected ? '0 0 0 2px var(--text)' : '0 0 0 1px var(--line)' });
  return (
    <div class="row" role="group" aria-label="Colour" style={{ gap: '8px' }}>
      {auto && (
        <button type="button" aria-pressed={value === null} onClick={() => onChange(null)} class="button small" style={{ borderColor: value === null ? 'var(--text)' : undefined }}>
          Auto
        </button>
      )}
      {PALETTE.map((c) => (
        <button type="button" aria-label={`Colour ${c}`} aria-pressed={value === c} title={c} onClick={() => onChange(c)} style={{ ...swatch(value === c), background: c }} />
      ))}
      <label class="row" style={{ gap: '4px' }} title="Any colour">
        <input type="color" aria-label="Custom colour" value={value ?? '#2563eb'} onInput={(e) => onChange(e.currentTarget.value)} style={{ width: '34px', height: '28px', padding: '1px' }} />
      </label>
    </div>
  );
}

function NewLabel({ onClose, onDone }: { onClose: () => void; onDone: (l: Label) => void }) {
  const [color, setColor] = useState<string | null>(null);
  return (
    <Modal title="New label" onClose={onClose}>
      <Form
        submit="Create label"
        action={async (form) => {
          const made = await api<Label>('/labels', { body: { name: String(form.get('name')).trim(), ...(color ? { color } : {}), skip_inbox: form.get('skip_inbox') === 'on' } });
          toast(`Created ${made.name}`);
          onDone(made);
        }}
      >
        <Field label="Name" hint="Use / to nest it under another: Clients/Acme. At most 100 characters, no commas.">
          <input name="name" required maxLength={100} autoFocus placeholder="Receipts" />
        </Field>
        <Field label="Colour">
          <ColorPicker value={color} onChange={setColor} auto />
        </Field>
        <label class="row" style={{ alignItems: 'flex-start', flexWrap: 'nowrap' }}>
          <input type="checkbox" name="skip_inbox" style={{ marginTop: '4px' }} />
          <span>
            <strong>Bucket: skip the Inbox</strong>
            <br />
            <small class="muted">Received mail filed here is archived at once and shows only under the label.</small>
          </span>
        </label>
      </Form>
    </Modal>
  );
}

// ─── One label ───────────────────────────────────────────────────────────────────────────────────────────

function LabelPage({ id, labels }: { id: string; labels: LabelsState }) {
  const [deleting, setDeleting] = useState(false);
  const label = labels.data?.data.find((l) => l.id === id || l.name.toLowerCase() === id.toLowerCase());
  useEffect(() => void (document.title = `${label?.name ?? 'Label'} · Mailwright`), [label?.name]);
  const back = (
    <a href="/labels" class="muted" style={{ display: 'inline-block', marginBottom: '8px' }}>
      ← Labels
    </a>
  );
  if (labels.error)
    return (
      <Page title="Label">
        {back}
        <ErrorBox message={labels.error} retry={labels.reload} />
      </Page>
    );
  if (!labels.data)
    return (
      <Page title="Label">
        {back}
        <Loading label="Loading the label" />
      </Page>
    );
  if (!label)
    return (
      <Page title="Label">
        {back}
        <Empty title="This label does not exist">
          It may have been deleted. <a href="/labels">See every label</a>.
        </Empty>
      </Page>
    );
  return (
    <Page
      title={label.name}
      actions={
        <>
          <a class="button" href={`/mail/label/${label.id}`}>
            Open in mailbox
          </a>
          <button class="button danger" onClick={() => setDeleting(true)}>
            Delete
          </button>
        </>
      }
    >
      <div class="row" style={{ marginTop: '-12px', marginBottom: '14px', gap: '8px' }}>
        {back}
        <span class="grow" />
        <span class="label-dot" style={{ background: label.color, margin: 0 }} />
        <span class="muted">
          {plural(label.totalCount, 'email')} · {label.unreadCount} unread
        </span>
        {label.skipInbox && <Badge tone="info">Bucket</Badge>}
      </div>
      <Filing pending={labels.data.mailbox.resortPending} />
      <div class="split" style={{ alignItems: 'start' }}>
        <Settings key={`${label.id}:${label.name}:${label.color}:${label.skipInbox}`} label={label} onDone={labels.reload} />
        <Rules label={label} onChange={labels.reload} />
      </div>
      {deleting && (
        <Modal title={`Delete ${label.name}?`} onClose={() => setDeleting(false)}>
          <Form
            submit="Delete label"
            action={async () => {
              await api(`/labels/${label.id}`, { method: 'DELETE' });
              toast(`Deleted ${label.name}`);
              setDeleting(false);
              navigate('/labels');
              labels.reload();
            }}
          >
            <p style={{ margin: 0 }}>
              The {plural(label.totalCount, 'email')} in it stay where they are and no longer carry it.
              {label.rules.length > 0 && ` Its ${plural(label.rules.length, 'rule')} ${label.rules.length === 1 ? 'is' : 'are'} deleted with it, so new mail is no longer filed.`}
            </p>
          </Form>
        </Modal>
      )}
    </Page>
  );
}

function Settings({ label, onDone }: { label: Label; onDone: () => void }) {
  const [name, setName] = useState(label.name);
  const [color, setColor] = useState(label.color);
  const [bucket, setBucket] = useState(label.skipInbox);
  const [archiveExisting, setArchiveExisting] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const changed = name.trim() !== label.name || color !== label.color || bucket !== label.skipInbox;
  const save = async () => {
    const body: Record<string, unknown> = {};
    if (name.trim() !== label.name) body.name = name.trim();
    if (color !== label.color) body.color = color;
    if (bucket !== label.skipInbox) {
      body.skip_inbox = bucket;
      if (bucket) body.apply_to_existing = archiveExisting;
    }
    setBusy(true);
    setError(null);
    try {
      await api(`/labels/${label.id}`, { method: 'PATCH', body });
      toast(bucket && !label.skipInbox && archiveExisting && label.totalCount ? 'Saved: its received mail is being archived' : 'Label saved');
      onDone();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-label="Label settings">
      <h2>Settings</h2>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (changed) void save();
        }}
      >
        <Field label="Name" hint="Renaming keeps its emails and rules. Use / to nest.">
          <input name="name" value={name} required maxLength={100} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Colour">
          <ColorPicker value={color} onChange={(c) => setColor(c ?? label.color)} />
        </Field>
        <label class="row" style={{ alignItems: 'flex-start', flexWrap: 'nowrap' }}>
          <input type="checkbox" checked={bucket} onChange={(e) => setBucket(e.currentTarget.checked)} style={{ marginTop: '4px' }} />
          <span>
            <strong>Bucket: skip the Inbox</strong>
            <br />
            <small class="muted">Received mail filed here is archived at once and shows only under the label.</small>
          </span>
        </label>
        {bucket && !label.skipInbox && label.totalCount > 0 && (
          <label class="row" style={{ paddingLeft: '24px' }}>
            <input type="checkbox" checked={archiveExisting} onChange={(e) => setArchiveExisting(e.currentTarget.checked)} />
            <span>Also archive the received mail already in it</span>
          </label>
        )}
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        <div class="row">
          <button class="button primary" type="submit" disabled={!changed || busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
          {changed && !busy && (
            <button
              class="button"
              type="button"
              onClick={() => {
                setName(label.name);
                setColor(label.color);
                setBucket(label.skipInbox);
                setError(null);
              }}
            >
              Undo
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

// ─── Rules ──────────────────────────────────────────────────────────────────────────────────────────────

function Rules({ label, onChange }: { label: Label; onChange: () => void }) {
  const inboxes = useLoad(() => api<{ data: Inbox[] }>('/inboxes?limit=100').then((r) => r.data), []);
  const inboxName = (id: string) => inboxes.data?.find((i) => i.id === id)?.address ?? id;
  const remove = async (rule: Rule) => {
    try {
      await api(`/labels/${label.id}/rules/${rule.id}`, { method: 'DELETE' });
      toast('Rule deleted: mail already filed keeps the label');
      onChange();
    } catch (err) {
      toast(messageOf(err));
    }
  };
  return (
    <section class="card" aria-label="Rules" style={{ display: 'grid', gap: '12px', minWidth: 0 }}>
      <h2 style={{ margin: 0 }}>Rules</h2>
      {label.rules.length === 0 ? (
        <p class="muted" style={{ margin: 0 }}>
          No rules yet: mail gets this label only by hand. Add a rule below to file matching mail automatically.
        </p>
      ) : (
        <ul style={{ listStyle: 'none', margin: 0, padding: 0, display: 'grid', gap: '8px' }} aria-label="Saved rules">
          {label.rules.map((r) => (
            <li class="row" data-rule={r.id} style={{ border: '1px solid var(--line)', borderRadius: '8px', padding: '8px 10px', flexWrap: 'nowrap', alignItems: 'flex-start' }}>
              <span class="grow" style={{ minWidth: 0, wordBreak: 'break-word' }}>
                {describe(r, inboxName)}
                {r.skipInbox && (
                  <>
                    {' '}
                    <Badge tone="info">skips the Inbox</Badge>
                  </>
                )}
              </span>
              <button class="icon" aria-label="Delete this rule" title="Delete this rule" onClick={() => remove(r)}>
                <Icon name="close" />
              </button>
            </li>
          ))}
        </ul>
      )}
      <RuleForm label={label} inboxes={inboxes.data ?? []} onSaved={onChange} />
    </section>
  );
}

function describe(r: Pick<Rule, 'direction' | 'inboxId' | 'from' | 'to' | 'subject'>, inboxName: (id: string) => string) {
  const q = (s: string) => <strong>“{s}”</strong>;
  const parts = [r.direction === 'in' ? 'Received mail' : r.direction === 'out' ? 'Sent mail' : 'Any mail'];
  return (
    <>
      {parts[0]}
      {r.inboxId && <> in {inboxName(r.inboxId)}</>}
      {r.from && <> · from contains {q(r.from)}</>}
      {r.to && <> · to contains {q(r.to)}</>}
      {r.subject && <> · subject contains {q(r.subject)}</>}
    </>
  );
}

interface Draft {
  direction: '' | 'in' | 'out';
  inbox_id: string;
  from: string;
  to: string;
  subject: string;
  skip_inbox: boolean;
  apply_to_existing: boolean;
}
const EMPTY: Draft = { direction: '', inbox_id: '', from: '', to: '', subject: '', skip_inbox: false, apply_to_existing: true };

/** The rule as the API takes it: empty conditions left out. */
const ruleBody = (d: Draft) => ({
  ...(d.direction ? { direction: d.direction } : {}),
  ...(d.inbox_id ? { inbox_id: d.inbox_id } : {}),
  ...(d.from.trim() ? { from: d.from.trim() } : {}),
  ...(d.to.trim() ? { to: d.to.trim() } : {}),
  ...(d.subject.trim() ? { subject: d.subject.trim() } : {}),
});

function RuleForm({ label, inboxes, onSaved }: { label: Label; inboxes: Inbox[]; onSaved: () => void }) {
  const [d, setD] = useState<Draft>({ ...EMPTY, skip_inbox: label.skipInbox });
  const [dry, setDry] = useState<DryState>({ state: 'idle' });
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const conditions = ruleBody(d);
  const hasCondition = Object.keys(conditions).length > 0;
  const needsCondition = 'Give at least one condition: the kind of mail, an inbox, from, to or subject.';
  // A dry run answers for the conditions it was given; changing them makes the answer stale.
  const set = (patch: Partial<Draft>) => {
    setD((x) => ({ ...x, ...patch }));
    setError(null);
    if (['direction', 'inbox_id', 'from', 'to', 'subject'].some((k) => k in patch)) setDry({ state: 'idle' });
  };
  const runDry = async () => {
    if (!hasCondition) return setError(needsCondition);
    setError(null);
    setDry({ state: 'running' });
    try {
      setDry({ state: 'done', result: await api<DryRun>(`/labels/${label.id}/rules`, { body: { ...conditions, dry_run: true } }) });
    } catch (err) {
      setDry({ state: 'idle' });
      setError(messageOf(err));
    }
  };
  const count = dry.state === 'done' ? dry.result.count : null;
  const save = async () => {
    if (!hasCondition) return setError(needsCondition);
    setSaving(true);
    setError(null);
    try {
      await api(`/labels/${label.id}/rules`, { body: { ...conditions, skip_inbox: d.skip_inbox, apply_to_existing: d.apply_to_existing } });
      toast(d.apply_to_existing && count ? `Rule saved: filing ${plural(count, 'stored email')} in the background` : 'Rule saved: matching mail is filed here from now on');
      setD({ ...EMPTY, skip_inbox: label.skipInbox });
      setDry({ state: 'idle' });
      onSaved();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setSaving(false);
    }
  };
  return (
    <div style={{ borderTop: '1px solid var(--line)', paddingTop: '12px' }}>
      <h3 style={{ marginTop: 0 }}>Add a rule</h3>
      <form
        class="form"
        style={{ maxWidth: 'none' }}
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <p class="muted" style={{ margin: 0, fontSize: '13px' }}>
          Every condition you fill in must match. Text matches any part, in any case.
        </p>
        <div class="row" style={{ alignItems: 'flex-start' }}>
          <div style={{ flex: '1 1 140px' }}>
            <Field label="Mail">
              <select name="direction" value={d.direction} onChange={(e) => set({ direction: e.currentTarget.value as Draft['direction'] })}>
                <option value="">Received and sent</option>
                <option value="in">Received</option>
                <option value="out">Sent</option>
              </select>
            </Field>
          </div>
          <div style={{ flex: '1 1 160px' }}>
            <Field label="Inbox">
              <select name="inbox_id" value={d.inbox_id} onChange={(e) => set({ inbox_id: e.currentTarget.value })}>
                <option value="">Any inbox</option>
                {inboxes.map((i) => (
                  <option value={i.id}>{i.address}</option>
                ))}
              </select>
            </Field>
          </div>
        </div>
        <Field label="From contains">
          <input name="from" value={d.from} maxLength={200} placeholder="billing@ or Acme" onInput={(e) => set({ from: e.currentTarget.value })} />
        </Field>
        <Field label="To contains">
          <input name="to" value={d.to} maxLength={200} placeholder="team@yourdomain" onInput={(e) => set({ to: e.currentTarget.value })} />
        </Field>
        <Field label="Subject contains">
          <input name="subject" value={d.subject} maxLength={200} placeholder="invoice" onInput={(e) => set({ subject: e.currentTarget.value })} />
        </Field>
        <label class="row">
          <input type="checkbox" checked={d.skip_inbox} onChange={(e) => set({ skip_inbox: e.currentTarget.checked })} />
          <span>Skip the Inbox (archive received mail it files)</span>
        </label>
        <label class="row">
          <input type="checkbox" checked={d.apply_to_existing} onChange={(e) => set({ apply_to_existing: e.currentTarget.checked })} />
          <span>{count === null ? 'Also file the stored emails that match' : count === 0 ? 'Also file stored emails that match (none do now)' : `Also file the ${plural(count, 'stored email')} that match`}</span>
        </label>
        <DryRunResult dry={dry} />
        {error && (
          <p class="form-error" role="alert">
            {error}
          </p>
        )}
        <div class="row">
          <button type="button" class="button" onClick={runDry} disabled={dry.state === 'running' || saving}>
            {dry.state === 'running' ? 'Trying…' : 'Dry run'}
          </button>
          <button type="submit" class="button primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save rule'}
          </button>
          <span class="muted" style={{ fontSize: '13px' }}>
            A dry run shows what it would file. Nothing changes until you save.
          </span>
        </div>
      </form>
    </div>
  );
}

type DryState = { state: 'idle' } | { state: 'running' } | { state: 'done'; result: DryRun };

function DryRunResult({ dry }: { dry: DryState }) {
  if (dry.state !== 'done') return null;
  const { count, emails } = dry.result;
  return (
    <div role="status" aria-label="Dry run result" data-testid="dry-run" style={{ background: 'var(--accent-soft)', borderRadius: '8px', padding: '10px 12px' }}>
      <strong>{count === 0 ? 'No stored email matches.' : `Would file ${plural(count, 'stored email')}.`}</strong>{' '}
      <span class="muted">{count === 0 ? 'It will still file new mail that matches.' : count > emails.length ? `The newest ${emails.length}:` : emails.length > 1 ? 'Newest first:' : ''}</span>
      {emails.length > 0 && (
        <ul style={{ listStyle: 'none', margin: '8px 0 0', padding: 0, display: 'grid', gap: '4px', maxHeight: '220px', overflowY: 'auto' }}>
          {emails.map((e) => (
            <li class="row" style={{ gap: '8px', flexWrap: 'nowrap', fontSize: '13px' }}>
              <span title={e.direction === 'in' ? 'Received' : 'Sent'}>
                <Icon name={e.direction === 'in' ? 'received' : 'sent'} label={e.direction === 'in' ? 'Received' : 'Sent'} />
              </span>
              <span class="grow" style={{ minWidth: 0, overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' }}>
                <strong style={{ fontWeight: 600 }}>{e.subject || '(no subject)'}</strong> <span class="muted">{e.from}</span>
              </span>
              <span class="muted" style={{ flex: '0 0 auto' }}>
                {when(e.createdAt)}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
