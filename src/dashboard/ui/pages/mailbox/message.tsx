// One message of a thread: who sent it to whom, its authentication verdicts, and its body. Received HTML is
// shown by the box's own sandboxed page (GET /emails/:id/html: no scripts, no forms, dark with the dashboard
// when the mail sets no colours), remote images only when asked for this message or this sender.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { apiUrl } from '../../api.ts';
import { Badge } from '../../components/feedback.tsx';
import { bytes } from '../../components/format.tsx';
import { senderKey, who, type Email } from './model.ts';
import { keysFrom } from '../../shortcuts.ts';
import { Icon } from '../../icons.tsx';

export function Message({ email: e }: { email: Email }) {
  const [images, setImages] = useState(() => localStorage.getItem(senderKey(e.from.address)) === '1');
  const remote = useMemo(() => e.html !== null && /<img\b[^>]*\bsrc\s*=\s*["']?https?:/i.test(e.html), [e.html]);
  const { frame, loaded } = useBodyFrame();
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
        src={apiUrl(`/emails/${e.id}/html${images ? '?images=1' : ''}`)}
        onLoad={loaded}
      />
      {e.attachments.length > 0 && (
        <div class="attachments">
          {e.attachments.map((a) => (
            <a href={apiUrl(`/attachments/${a.id}`)} download={a.filename}>
              <Icon name="paperclip" /> {a.filename} <span class="muted">{bytes(a.sizeBytes)}</span>
            </a>
          ))}
        </div>
      )}
    </div>
  );
}

/**
 * The body's frame as the page sees it. The frame is the box's origin with no script of its own (sandbox
 * "allow-same-origin" alone, and the same in its CSP), so the page can read it: keys pressed after a click in the
 * body reach the shortcuts, and the frame takes the body's height. A document that cannot be read (a link
 * followed inside the frame) keeps its keys.
 */
function useBodyFrame() {
  const frame = useRef<HTMLIFrameElement>(null);
  const heard = useRef<{ doc: Document; stop: () => void } | null>(null);
  const readable = (): Document | null => {
    try {
      const doc = frame.current?.contentDocument;
      return doc?.documentElement ? doc : null;
    } catch {
      return null;
    }
  };
  const listen = () => {
    const doc = readable();
    if (!doc || heard.current?.doc === doc) return;
    heard.current?.stop();
    heard.current = { doc, stop: keysFrom(doc) };
  };
  useEffect(() => {
    // A click in the body before it has loaded (its images on their way): the page's window loses the focus to it.
    const onBlur = () => setTimeout(() => document.activeElement === frame.current && listen());
    addEventListener('blur', onBlur);
    return () => {
      removeEventListener('blur', onBlur);
      heard.current?.stop();
    };
  }, []);
  const loaded = () => {
    listen();
    const f = frame.current;
    const doc = readable();
    if (!f || !doc) return;
    // A body drawn dark (no colours of its own, dark mode) is dark to the frame's rounded corners.
    const back = doc.defaultView?.getComputedStyle(doc.documentElement).backgroundColor;
    f.style.background = back && back !== 'rgba(0, 0, 0, 0)' ? back : '';
    f.style.height = '0px'; // the CSS minimum, so that the body's own height shows
    f.style.height = `${Math.max(360, Math.min(4000, doc.documentElement.scrollHeight))}px`;
  };
  return { frame, loaded };
}
