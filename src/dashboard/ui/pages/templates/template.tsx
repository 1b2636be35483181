// A template's page: its key and state, the draft editor or the live release (editor.tsx), its releases
// (releases.tsx), and the actions: test send, publish (publish.tsx), archive and restore, start a draft.
import { useRef, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { useAction } from '../../components/action.ts';
import { Badge, Empty, toast } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';
import { useLoad } from '../../components/load.ts';
import { BackLink, Page, Pending } from '../../components/page.tsx';
import { navigate } from '../../router.ts';
import type { Me } from '../../session.ts';
import { Editor } from './editor.tsx';
import type { Detail, EditorHandle } from './model.ts';
import { PublishDialog, TestSend } from './publish.tsx';
import { Releases } from './releases.tsx';

export function TemplatePage({ id, tab, me }: { id: string; tab: 'editor' | 'releases'; me: Me }) {
  const detail = useLoad(() => api<Detail>(`/templates/${encodeURIComponent(id)}`), [id]);
  const handle = useRef<EditorHandle | null>(null);
  const [dialog, setDialog] = useState<'publish' | 'test' | null>(null);
  const { busy, run } = useAction();
  const back = (
    <BackLink href="/templates" inline>
      Templates
    </BackLink>
  );
  if (!detail.data) return <Pending title="Template" state={detail} back={back} label="Opening the template" />;
  const { template: t, draft, activeVersion, versions } = detail.data;
  const active = versions.find((v) => v.id === t.activeVersionId);
  const base = `/templates/${t.id}`;

  const lifecycle = (to: 'archive' | 'restore') =>
    run(async () => {
      if (to === 'archive' && handle.current) await handle.current.flush();
      await api(`${base}/${to}`, { method: 'POST', body: {} });
      toast(to === 'archive' ? `Archived ${t.key}: it can no longer be sent` : `Restored ${t.key}`);
      detail.reload();
    });

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
  const { busy, run } = useAction();
  // Started, the draft replaces this button: it stays busy until then.
  const start = () =>
    run(async () => {
      await api(`/templates/${templateId}/draft`, { method: 'POST', body: {} });
      toast('Draft started from the live release');
      onDone();
    }, true);
  return (
    <button class="button primary" disabled={busy} onClick={start}>
      {busy ? 'Starting…' : 'Start a draft'}
    </button>
  );
}
