// The preview beside the editor, as the box renders the saved draft with the sample data: the subject, the
// findings by severity (errors first), the HTML at wide or phone width (html-frame.tsx) and the text part.
import { useMemo, useState } from 'preact/hooks';
import { Badge, Empty, ErrorBox, Loading } from '../../components/feedback.tsx';
import type { PreviewState } from './draft.ts';
import { HtmlFrame } from './html-frame.tsx';
import type { Finding } from './model.ts';

const SEVERITY: Record<Finding['severity'], { rank: number; tone: 'bad' | 'warn' | 'info'; label: string }> = {
  error: { rank: 0, tone: 'bad', label: 'Error' },
  warning: { rank: 1, tone: 'warn', label: 'Warning' },
  info: { rank: 2, tone: 'info', label: 'Note' },
};

export function Preview({ preview, retry }: { preview: PreviewState; retry: () => void }) {
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
