// One message of a thread: who sent it to whom, its authentication verdicts, and its body. Received HTML is
// shown by the box's own sandboxed page (GET /emails/:id/html: no scripts, no forms, an opaque origin), remote
// images only when asked for this message or this sender.
import { useMemo, useRef, useState } from 'preact/hooks';
import { Badge, bytes } from '../../components.tsx';
import { senderKey, who, type Email } from './model.ts';

export function Message({ email: e }: { email: Email }) {
  const [images, setImages] = useState(() => localStorage.getItem(senderKey(e.from.address)) === '1');
  const remote = useMemo(() => e.html !== null && /<img\b[^>]*\bsrc\s*=\s*["']?https?:/i.test(e.html), [e.html]);
  const frame = useRef<HTMLIFrameElement>(null);
  const verdict = (name: string, v: { result: string; domain?: string | null } | undefined) =>
    v && (
      <Badge tone={v.result === 'pass' ? 'good' : v.result === 'fail' ? 'bad' : 'neutral'}>
        <span title={v.domain ? `for ${v.domain}` : undefined}>{`${name} ${v.result}`}</span>
      </Badge>
    );
  return (
    <div class="message">
      <div class="message-head">
        <div class="row">
          <strong>{who(e.from)}</strong>
          <span class="addr" title="The address the message really came from">
            &lt;{e.from.address}&gt;
          </span>
          <span class="grow" />
          <span class="muted">{new Date(e.createdAt).toLocaleString()}</span>
        </div>
        <div class="addr">To: {e.to.map((p) => (p.name ? `${p.name} <${p.address}>` : p.address)).join(', ')}</div>
        {e.direction === 'in' && (
          <div class="verdicts">
            {verdict('SPF', e.authentication?.spf)}
            {verdict('DKIM', e.authentication?.dkim)}
            {verdict('DMARC', e.authentication?.dmarc)}
            {e.classification && <span class="muted">· {e.classification}</span>}
          </div>
        )}
      </div>
      {remote && !images && (
        <div class="notice" data-testid="images-blocked">
          Remote images are hidden to protect your privacy.
          <button class="button small" onClick={() => setImages(true)}>
            Show images
          </button>
          <button
            class="button small"
            onClick={() => {
              localStorage.setItem(senderKey(e.from.address), '1');
              setImages(true);
            }}
          >
            Always show from {e.from.address}
          </button>
        </div>
      )}
      <iframe
        ref={frame}
        title={`Message from ${who(e.from)}`}
        sandbox=""
        referrerpolicy="no-referrer"
        src={`/api/v1/emails/${e.id}/html${images ? '?images=1' : ''}`}
        onLoad={() => {
          // The frame is sandboxed (no same origin), so its height cannot be read; a tall default fits most mail.
          if (frame.current) frame.current.style.height = `${Math.max(360, Math.min(1600, (e.html?.length ?? e.text?.length ?? 0) / 6))}px`;
        }}
      />
      {e.attachments.length > 0 && (
        <div class="attachments">
          {e.attachments.map((a) => (
            <a href={`/api/v1/attachments/${a.id}`} download={a.filename}>
              📎 {a.filename} <span class="muted">{bytes(a.sizeBytes)}</span>
            </a>
          ))}
        </div>
      )}
    </div>
  );
}
