// One message of a thread: who sent it to whom, its authentication verdicts, and its body. Received HTML is
// shown by the box's own sandboxed page (GET /emails/:id/html: no scripts, no forms, dark with the dashboard
// when the mail sets no colours), remote images only when asked for this message or this sender.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Badge, bytes } from '../../components.tsx';
import { senderKey, who, type Email } from './model.ts';
import { keysFrom } from '../../shortcuts.ts';
import { Icon } from '../../icons.tsx';

export function Message({ email: e }: { email: Email }) {
  const [images, setImages] = useState(() => localStorage.getItem(senderKey(e.from.address)) === '1');
  const remote = useMemo(() => e.html !== null && /<img\b[^>]*\bsrc\s*=\s*["']?https?:/i.test(e.html), [e.html]);
  const frame = useRef<HTMLIFrameElement>(null);
  // The frame is the box's origin with no script of its own (sandbox="allow-same-origin" alone, and the same in
  // its CSP), so the page can read it: keys pressed after a click in the body reach the shortcuts, and the frame
  // takes the body's height. A frame whose document cannot be read (a link followed inside it) keeps the rest.
  const unlisten = useRef<(() => void) | null>(null);
  useEffect(() => () => unlisten.current?.(), []);
  const loaded = () => {
    const f = frame.current;
    unlisten.current?.();
    unlisten.current = null;
    let doc: Document | null = null;
    try {
      doc = f?.contentDocument ?? null;
    } catch {}
    if (!f || !doc?.documentElement) return;
    unlisten.current = keysFrom(doc);
    // A body drawn dark (no colours of its own, dark mode) is dark to the frame's rounded corners.
    const back = doc.defaultView?.getComputedStyle(doc.documentElement).backgroundColor;
    f.style.background = back && back !== 'rgba(0, 0, 0, 0)' ? back : '';
    f.style.height = '0px'; // the CSS minimum, so that the body's own height shows
    f.style.height = `${Math.max(360, Math.min(4000, doc.documentElement.scrollHeight))}px`;
  };
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
        sandbox="allow-same-origin"
        referrerpolicy="no-referrer"
        src={`/api/v1/emails/${e.id}/html${images ? '?images=1' : ''}`}
        onLoad={loaded}
      />
      {e.attachments.length > 0 && (
        <div class="attachments">
          {e.attachments.map((a) => (
            <a href={`/api/v1/attachments/${a.id}`} download={a.filename}>
              <Icon name="paperclip" /> {a.filename} <span class="muted">{bytes(a.sizeBytes)}</span>
            </a>
          ))}
        </div>
      )}
    </div>
  );
}
