// Open and click tracking, per sending domain and off by default (PATCH /domains/:id open_tracking,
// click_tracking). A tracked copy's HTML gets a 1x1 image, and its http(s) links lead through the box, under
// the public URL; fetching them records `opened` / `clicked` for that copy's recipient (once an hour per link;
// visits.ts counts the repeats). A click goes only to a link that was in the message (stored with the email,
// chosen by its signed position), never to a URL a request names: the box is no open redirect. The text part
// is never changed.
import type { Clock } from '../clock.ts';
import { run, value, type Query } from '../db/query.ts';
import { addEventSeq, recentVisit } from '../emails/events.ts';
import { escapeHtml } from '../pages/html.ts';
import { resolveLinkToken, type LinkHolder } from './link-token.ts';

export const OPEN_PATH = '/open';
export const CLICK_PATH = '/click';

/** Links past this many in one message are left as they are (each costs a token in every copy). */
export const MAX_TRACKED_LINKS = 1000;

// ---- The HTML: finding and rewriting <a href> ----

// What the HTML tokenizer treats as space, and the parts of a start tag (WHATWG HTML 13.2.5).
const SPACE = /[\t\n\f\r ]*/y;
const TAG_OPEN = /<([a-zA-Z][^\t\n\f\r />]*)/y;
const ATTR_NAME = /[^\t\n\f\r />][^\t\n\f\r />=]*/y;
const UNQUOTED = /[^\t\n\f\r >]*/y;
// Elements whose content is text, not markup: an "<a" inside them is no link.
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'plaintext']);

interface Href {
  /** The attribute value's span in the HTML, quotes included. */
  start: number;
  end: number;
  /** The absolute http(s) URL a browser would open, or null when it is not one we can be sure of. */
  url: string | null;
}

/** The href of every <a> start tag, in document order; comments and raw-text elements are skipped. */
function* hrefs(html: string): Generator<Href> {
  const at = (re: RegExp, i: number) => {
    re.lastIndex = i;
    const m = re.exec(html);
    return { m, end: re.lastIndex };
  };
  let i = 0;
  for (;;) {
    i = html.indexOf('<', i);
    if (i === -1) return;
    if (html.startsWith('<!--', i)) {
      const close = html.indexOf('-->', i + 4);
      if (close === -1) return;
      i = close + 3;
      continue;
    }
    const tag = at(TAG_OPEN, i);
    if (!tag.m) {
      i++;
      continue;
    }
    const name = tag.m[1].toLowerCase();
    let j = tag.end;
    let href: Href | null = null;
    let hrefSeen = false;
    for (;;) {
      while (j < html.length && '\t\n\f\r /'.includes(html[j])) j++;
      // An unfinished tag at the end is not markup a browser would act on.
      if (j >= html.length) return;
      if (html[j] === '>') break;
      const attr = at(ATTR_NAME, j);
      j = attr.end;
      // The first of duplicate attributes is the one that counts, even an empty one.
      const isHref: boolean = name === 'a' && !hrefSeen && attr.m![0].toLowerCase() === 'href';
      hrefSeen ||= isHref;
      const eq = at(SPACE, j).end;
      if (html[eq] !== '=') continue;
      const start = at(SPACE, eq + 1).end;
      let end: number;
      let value: string;
      if (html[start] === '"' || html[start] === "'") {
        const close = html.indexOf(html[start], start + 1);
        if (close === -1) return;
        end = close + 1;
        value = html.slice(start + 1, close);
      } else {
        end = at(UNQUOTED, start).end;
        value = html.slice(start, end);
      }
      j = end;
      if (isHref) href = { start, end, url: trackable(value) };
    }
    if (href) yield href;
    i = j + 1;
    if (RAW_TEXT.has(name)) {
      const close = new RegExp(`</${name}[\\t\\n\\f\\r />]`, 'ig');
      close.lastIndex = i;
      if (!close.exec(html)) return;
      i = close.lastIndex - 1;
    }
  }
}

// Character references that matter in URLs. Anything else we cannot decode exactly leaves the link untracked:
// a link we might redirect wrongly is better left alone.
const DECODED = new Map(Object.entries({ amp: '&', AMP: '&', lt: '<', LT: '<', gt: '>', GT: '>', quot: '"', QUOT: '"', apos: "'" }));
// Names a browser decodes even without ';' (WHATWG HTML 13.5, "named character references"), lower-cased.
const LEGACY = new Set(
  ('aacute acirc acute aelig agrave amp aring atilde auml brvbar ccedil cedil cent copy curren deg divide eacute ecirc egrave eth euml ' +
    'frac12 frac14 frac34 gt iacute icirc iexcl igrave iquest iuml laquo lt macr micro middot nbsp not ntilde oacute ocirc ograve ordf ' +
    'ordm oslash otilde ouml para plusmn pound quot raquo reg sect shy sup1 sup2 sup3 szlig thorn times uacute ucirc ugrave uml uuml yacute yen yuml').split(' '),
);

function decodeAttribute(value: string): string | null {
  let exact = true;
  const decoded = value.replace(/&(?:#(\d+);?|#[xX]([0-9a-fA-F]+);?|([a-zA-Z][a-zA-Z0-9]*)(;?))/g, (whole, dec, hex, name, semi, offset: number) => {
    if (dec !== undefined || hex !== undefined) {
      const cp = parseInt(dec ?? hex, dec !== undefined ? 10 : 16);
      // Browsers replace these (NUL, surrogates, and 0x80-0x9F by windows-1252): not worth copying.
      if (!(cp > 0 && cp <= 0x10ffff) || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) exact = false;
      return exact ? String.fromCodePoint(cp) : whole;
    }
    // In an attribute, "&name" without ';' before '=' stays as written: the common `?a=1&b=2`.
    if (!semi && value[offset + whole.length] === '=') return whole;
    if (DECODED.has(name) && (semi || name !== 'apos')) return DECODED.get(name)!;
    if (semi || LEGACY.has(name.toLowerCase())) exact = false;
    return whole;
  });
  return exact ? decoded : null;
}

function trackable(value: string): string | null {
  const decoded = decodeAttribute(value);
  if (decoded === null || !/^[\0-\x20]*https?:/i.test(decoded)) return null;
  try {
    // What a browser would open: WHATWG URL parsing also drops the spaces, tabs and newlines it would drop.
    const url = new URL(decoded);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** The http(s) links of the HTML's <a> tags that tracking would rewrite, in order: stored with the email. */
export function findLinks(html: string): string[] {
  const links: string[] = [];
  for (const h of hrefs(html)) {
    if (h.url === null) continue;
    if (links.length === MAX_TRACKED_LINKS) break;
    links.push(h.url);
  }
  return links;
}

/**
 * The HTML of one recipient's copy: the n-th link findLinks returns becomes `links[n]`, and `pixel` (an image
 * URL) goes in last, before </body>. Everything else stays byte for byte.
 */
export function rewriteHtml(html: string, p: { links: string[] | null; pixel: string | null }): string {
  let out = '';
  let last = 0;
  let n = 0;
  if (p.links?.length) {
    for (const h of hrefs(html)) {
      if (h.url === null) continue;
      if (n === p.links.length) break;
      out += `${html.slice(last, h.start)}"${escapeHtml(p.links[n++])}"`;
      last = h.end;
    }
  }
  out += html.slice(last);
  if (!p.pixel) return out;
  const img = `<img src="${escapeHtml(p.pixel)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
  let body = -1;
  for (const m of out.matchAll(/<\/body\s*>/gi)) body = m.index;
  return body === -1 ? out + img : out.slice(0, body) + img + out.slice(body);
}

// ---- The store: links of an email, opens and clicks ----

/** Called in the transaction that makes the email's plan (personalise.ts). */
export function* storeLinks(emailId: string, links: string[]): Query<void> {
  for (const [i, url] of links.entries()) yield* run('INSERT INTO email_links (email_id, position, url) VALUES (?, ?, ?)', emailId, i, url);
}

/** Who fetched a tracking link, as the event's data says. */
export interface Visit {
  userAgent: string | null;
  ip: string;
}

/** One visit of a recipient's pixel (`opened`) or of one of its links (`clicked`, with the link's URL). */
export interface LinkVisit {
  holder: LinkHolder;
  type: 'opened' | 'clicked';
  url: string | null;
  visit: Visit;
}

/** The recipient an open pixel's token names, or null. Reads only; `secret` is the box secret. */
export const openHolder = (secret: Buffer, token: string): Query<LinkHolder | null> => resolveLinkToken(secret, 'open', token);

/** Where a click token leads: one of the links stored with its email, or nowhere (null). Reads only. */
export function* clickTarget(secret: Buffer, token: string): Query<(LinkHolder & { url: string }) | null> {
  const holder = yield* resolveLinkToken(secret, 'click', token);
  if (!holder) return null;
  const url = yield* value<string>('SELECT url FROM email_links WHERE email_id = ? AND position = ?', holder.emailId, holder.link);
  return url ? { ...holder, url } : null;
}

/**
 * In the caller's transaction: the visit's `opened` / `clicked` event (with its webhooks and its count in
 * analytics), unless one of the same recipient (and link) made since `since` stands for it already. The seq and
 * time of the event the visit belongs to, and whether it was added now.
 */
export function* recordVisit(clock: Clock, v: LinkVisit, since: number): Query<{ seq: number; createdAt: number; added: boolean }> {
  const { holder } = v;
  const found = yield* recentVisit({ emailId: holder.emailId, type: v.type, recipient: holder.recipient, url: v.url, since });
  if (found) return { ...found, added: false };
  const data = v.url === null ? { ...v.visit } : { url: v.url, ...v.visit };
  const seq = yield* addEventSeq(clock, { workspaceId: holder.workspaceId, emailId: holder.emailId, type: v.type, recipient: holder.recipient, data });
  return { seq, createdAt: clock.now(), added: true };
}
