// Templates: the list (active and archived, searched as you type) and new templates from the starters
// (new-template.tsx); a template's page is template.tsx. Paths: /templates, /templates/:id[/releases].
import { useEffect, useState } from 'preact/hooks';
import { api, qs } from '../../api.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { when } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Page } from '../../components/page.tsx';
import { navigate, useLocation } from '../../router.ts';
import type { Me } from '../../session.ts';
import type { Lifecycle, TemplateSummary } from './model.ts';
import { NewTemplate } from './new-template.tsx';
import { TemplatePage } from './template.tsx';

export function Templates({ me }: { me: Me }) {
  const { path } = useLocation();
  const [, , id, tab] = path.split('/');
  if (id) return <TemplatePage key={id} id={decodeURIComponent(id)} tab={tab === 'releases' ? 'releases' : 'editor'} me={me} />;
  return <TemplateList />;
}

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
