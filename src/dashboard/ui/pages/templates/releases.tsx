// A template's releases: each with how many emails used it and when last, the live one marked, its source in a
// dialog, and the request that sends with the template.
import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, Empty, Loaded } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';
import { when } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Modal } from '../../components/modal.tsx';
import type { Detail, Release, Version } from './model.ts';

export function Releases({ detail }: { detail: Detail }) {
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
