// An email's HTML as the dashboard's reading pane shows it: inline (cid:) images made data: URLs so the page
// needs nothing from the box, and a meta refresh taken out. The route serves it with a Content-Security-Policy
// that sandboxes it (no scripts, no forms, an opaque origin) and allows remote images only when asked.
import type { Db } from '../db/open.ts';
import { unpackBodies, type StoredBodies } from '../mail/packing.ts';

/** Inline images carried as data: URLs, up to this much in all (bigger ones stay broken, as in most clients). */
const MAX_INLINE_BYTES = 5 * 1024 * 1024;
const META_REFRESH = /<meta\b[^>]*http-equiv\s*=\s*["']?\s*refresh[^>]*>/gi;

export function displayHtml(db: Db, workspaceId: string, emailId: string): string | null {
  const stored = db
    .prepare('SELECT c.html_body AS html, c.text_body AS text FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.workspace_id = ? AND e.id = ?')
    .get(workspaceId, emailId) as StoredBodies | undefined;
  if (!stored) return null;
  const { text, html } = unpackBodies(stored);
  if (html === null) return `<pre style="white-space:pre-wrap;font:14px/1.5 system-ui,sans-serif;margin:0">${escape(text ?? '')}</pre>`;
  const inline = db
    .prepare("SELECT content_id, content_type, content FROM email_attachments WHERE email_id = ? AND content_id IS NOT NULL AND content_type LIKE 'image/%' ORDER BY position")
    .all(emailId) as Array<{ content_id: string; content_type: string; content: Buffer }>;
  const urls = new Map<string, string>();
  let budget = MAX_INLINE_BYTES;
  for (const a of inline) {
    if (a.content.length > budget) continue;
    budget -= a.content.length;
    urls.set(a.content_id.replace(/^<|>$/g, '').toLowerCase(), `data:${a.content_type.split(';')[0]};base64,${a.content.toString('base64')}`);
  }
  return html.replace(META_REFRESH, '').replace(/(["'(])cid:([^"')\s]+)/gi, (whole, quote: string, id: string) => {
    const url = urls.get(decodeURIComponentSafe(id).toLowerCase());
    return url ? `${quote}${url}` : whole;
  });
}

/** The CSP of a displayed email: its own inline styles and images in it; remote images only when asked. */
export const displayPolicy = (remoteImages: boolean) =>
  ["default-src 'none'", "style-src 'unsafe-inline'", `img-src data:${remoteImages ? ' https: http:' : ''}`, 'font-src data:', "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'", 'sandbox'].join('; ');

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
