// The rendered HTML of a template in a frame that runs nothing, its styles given back through the CSSOM (the
// dashboard's CSP refuses them in the markup), sized to its content.
import { useEffect, useMemo, useRef } from 'preact/hooks';

/**
 * The rendered HTML in a frame that runs nothing. A srcdoc frame inherits the dashboard's CSP, whose
 * style-src 'self' refuses every <style> element and style attribute, so an email would show unstyled (its
 * hidden preheader visible). The styles are therefore taken out of the markup and given back through the
 * CSSOM, which the CSP does not govern. That needs the frame's document: allow-same-origin without
 * allow-scripts keeps it script-free (sandboxed scripts never run, and the inherited CSP refuses inline ones).
 */
export function HtmlFrame({ html, phone }: { html: string; phone: boolean }) {
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
