// An email's HTML as the dashboard's reading pane shows it: inline (cid:) images made data: URLs so the page
// needs nothing from the box, a meta refresh taken out, and dark colours when the reader's system is dark and the
// mail sets none of its own. The route serves it with a Content-Security-Policy that sandboxes it (no scripts, no
// forms, no plugins, no navigation of the dashboard) and allows remote images only when asked.
import { all, get, type Query } from '../db/query.ts';
import { unpackBodies, type StoredBodies } from '../mail/packing.ts';

/** Inline images carried as data: URLs, up to this much in all (bigger ones stay broken, as in most clients). */
const MAX_INLINE_BYTES = 5 * 1024 * 1024;
const META_REFRESH = /<meta\b[^>]*http-equiv\s*=\s*["']?\s*refresh[^>]*>/gi;

export function* displayHtml(workspaceId: string, emailId: string): Query<string | null> {
  const stored = yield* get<StoredBodies>(
    'SELECT c.html_body AS html, c.text_body AS text FROM emails e JOIN email_contents c ON c.email_id = e.id WHERE e.workspace_id = ? AND e.id = ?',
    workspaceId,
    emailId,
  );
  if (!stored) return null;
  const { text, html } = unpackBodies(stored);
  if (html === null) return `${FOLLOW_DARK}<pre style="white-space:pre-wrap;font:14px/1.5 system-ui,sans-serif;margin:0">${escape(text ?? '')}</pre>`;
  const inline = yield* all<{ content_id: string; content_type: string; content: Buffer }>(
    "SELECT content_id, content_type, content FROM email_attachments WHERE email_id = ? AND content_id IS NOT NULL AND content_type LIKE 'image/%' ORDER BY position",
    emailId,
  );
  const urls = new Map<string, string>();
  let budget = MAX_INLINE_BYTES;
  for (const a of inline) {
    if (a.content.length > budget) continue;
    budget -= a.content.length;
    urls.set(a.content_id.replace(/^<|>$/g, '').toLowerCase(), `data:${a.content_type.split(';')[0]};base64,${a.content.toString('base64')}`);
  }
  const shown = html.replace(META_REFRESH, '').replace(/(["'(])cid:([^"')\s]+)/gi, (whole, quote: string, id: string) => {
    const url = urls.get(decodeURIComponentSafe(id).toLowerCase());
    return url ? `${quote}${url}` : whole;
  });
  return setsOwnColours(shown) ? shown : withStyle(shown, FOLLOW_DARK);
}

/**
 * Dark like the dashboard when the reader's system is dark (inside the frame the media query answers as the
 * dashboard's does); light mail stays as it was. Only for mail that sets no colour: one that colours some of
 * its text or backgrounds was designed on white, and darkening the rest would break it.
 */
const FOLLOW_DARK =
  '<style>:root{color-scheme:light dark}@media (prefers-color-scheme: dark){html{background:#1a1b20;color:#e8e9ed}a{color:#6b9bff}}</style>';

// A colour or background set anywhere: a CSS property (in a style attribute or a <style> sheet) or one of HTML's
// old attributes (bgcolor, text and link on <body>, color on <font>, background). Words in the text can match
// too ("color: blue"), which keeps such mail light: the safe side. Each is linear in the message's length.
const CSS_COLOUR = /(?:^|[\s;{"'])(?:color|background(?:-color|-image)?)\s*:/i;
const ATTRIBUTE_COLOUR = /\s(?:bgcolor|color|text|link|vlink|alink|background)\s*=/i;
export const setsOwnColours = (html: string) => CSS_COLOUR.test(html) || ATTRIBUTE_COLOUR.test(html);

/** `style` put in the document's head (or where a head would start), never before a doctype. */
function withStyle(html: string, style: string): string {
  for (const opening of [/<head[\s>]/i, /<html[\s>]/i, /<!doctype[\s>]/i]) {
    const at = html.search(opening);
    const end = at < 0 ? -1 : html.indexOf('>', at);
    if (end >= 0) return `${html.slice(0, end + 1)}${style}${html.slice(end + 1)}`;
  }
  return `${style}${html}`;
}

/**
 * The CSP of a displayed email: its own inline styles and images in it; remote images only when asked. The
 * sandbox allows the same origin and nothing else, so the dashboard can hear the keys pressed in the frame (its
 * shortcuts) and read the body's height, while nothing in the mail runs: no script (default-src 'none' refuses
 * them as well), form, plugin, popup or navigation of the page around it.
 */
export const displayPolicy = (remoteImages: boolean) =>
  ["default-src 'none'", "style-src 'unsafe-inline'", `img-src data:${remoteImages ? ' https: http:' : ''}`, 'font-src data:', "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'", 'sandbox allow-same-origin'].join('; ');

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
