// The content filter's view of a message: the set of tokens the classifier counts, each prefixed by where it
// came from (`s:free` is the subject's, `free` the body's), and whether the message carries GTUBE. Pure and
// bounded: it reads at most MAX_TEXT_CHARS of text and of HTML (body words from the first MAX_WORDS_CHARS) and
// yields at most MAX_TOKENS tokens, whatever the message. It never reads Received, Delivered-To or X-Spam-*
// fields: they describe the path, not the sender.
import { getDomain } from 'tldts';
import type { HeaderFields } from '../mail/headers.ts';

/** What tokenizing needs of a parsed message (mail/parse.ts ParsedMessage has all of it). */
export interface TokenInput {
  subject: string;
  text: string | null;
  html: string | null;
  headers: HeaderFields;
  fromAll: ReadonlyArray<{ address: string; name: string }>;
  replyTo: ReadonlyArray<{ address: string }>;
  attachments: ReadonlyArray<{ contentType: string; filename: string }>;
}

export interface MessageTokens {
  /** Distinct tokens, headers first, then subject, links and body words. */
  tokens: string[];
  /** The message carries SpamAssassin's GTUBE test string: always spam. */
  gtube: boolean;
}

/** SpamAssassin's Generic Test for Unsolicited Bulk Email (https://spamassassin.apache.org/gtube/). */
export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

export const MAX_TEXT_CHARS = 64 * 1024;
/**
 * Body words are read from the first this many characters of the text only (links, HTML structure and GTUBE from
 * all of MAX_TEXT_CHARS), as SpamAssassin scans only the first part of a body (body_part_scan_size). On the 2002
 * corpus, 4 KB caught as much held-out spam and put no more ham in Spam than 64 KB (205 of 210 and 1 of 1,610
 * either way; validation 85 against 86 of 90 spam, no ham either way), and a 10 KB letter of text costs about
 * 40 % less to tokenize and score on the box's busiest threads (scripts/bench/inbound-filter.ts).
 */
export const MAX_WORDS_CHARS = 4 * 1024;
export const MAX_TOKENS = 1500;
const MAX_LINKS = 100;
const MAX_WORD = 20;
const MIN_WORD = 3;

// Graham's "A Plan for Spam": letters, digits, dashes, apostrophes and dollar signs make a token; '!' is kept
// at the end of a word ("free!" says more than "free").
const WORD = /[\p{L}\p{N}$'’-]+!*/gu;
const URL_IN_TEXT = /\b(?:https?:\/\/|www\.)[^\s<>"'()[\]{}]+/gi;
const HREF = /\b(href|src)\s*=\s*["']?([^"'\s>]+)/gi;
const TAG = /<\s*([a-z][a-z0-9]*)\b/gi;
/** HTML elements whose presence says something about how the message was made. */
const TAGS = new Set(['font', 'table', 'center', 'img', 'form', 'script', 'style', 'iframe', 'map', 'base', 'object', 'embed', 'blink', 'marquee']);

export function messageTokens(m: TokenInput): MessageTokens {
  const out = new TokenSet();
  const text = (m.text ?? (m.html ? stripTags(m.html.slice(0, MAX_TEXT_CHARS)) : '')).slice(0, MAX_TEXT_CHARS);
  const html = m.html ? m.html.slice(0, MAX_TEXT_CHARS) : '';
  const gtube = m.subject.includes(GTUBE) || text.includes(GTUBE) || html.includes(GTUBE);
  headerTokens(m, out);
  subjectTokens(m.subject.slice(0, 1000), out);
  linkTokens(text, html, out);
  if (html) htmlTokens(html, out);
  // Links were counted above as links; their pieces are not words.
  bodyTokens(text.slice(0, MAX_WORDS_CHARS).replace(URL_IN_TEXT, ' '), out);
  return { tokens: out.list, gtube };
}

/**
 * A message's tokens as they cross between threads (the analyze thread that makes them, the writer that scores
 * or learns them): one string, which V8 copies in one go, where an array of ~600 strings cost ~0.1 ms to
 * serialize and as much to read back on a 10 KB letter. Both sides of the filter unpack it the same way.
 */
export interface PackedTokens {
  list: string;
  gtube: boolean;
}

export const packTokens = (t: MessageTokens): PackedTokens => ({ list: t.tokens.join('\n'), gtube: t.gtube });
export const unpackTokens = (p: PackedTokens): MessageTokens => ({ tokens: p.list ? p.list.split('\n') : [], gtube: p.gtube });

/** Keeps first-seen order, stops at MAX_TOKENS. */
class TokenSet {
  readonly list: string[] = [];
  private readonly seen = new Set<string>();
  add(token: string): boolean {
    if (this.list.length >= MAX_TOKENS) return false;
    // One lookup, not has() then add(): this runs for every word of the body.
    const before = this.seen.size;
    this.seen.add(token);
    if (this.seen.size !== before) this.list.push(token);
    return true;
  }
  get full(): boolean {
    return this.list.length >= MAX_TOKENS;
  }
}

function headerTokens(m: TokenInput, out: TokenSet): void {
  const from = m.fromAll.length === 1 ? m.fromAll[0]! : null;
  if (!from) out.add(m.fromAll.length ? 'from:several' : 'from:none');
  const fromDomain = from ? domainOf(from.address) : '';
  if (from) {
    addDomain('from:', fromDomain, out);
    const name = from.name.trim().toLowerCase();
    if (!name) out.add('fromname:none');
    else for (const w of name.slice(0, 200).match(WORD) ?? []) if (w.length >= 2 && w.length <= MAX_WORD) out.add(`fromname:${w}`);
    if (/\d{3,}/.test(from.address.slice(0, from.address.lastIndexOf('@')))) out.add('from:digits');
  }
  const replyTo = m.replyTo[0]?.address;
  if (replyTo) {
    const domain = domainOf(replyTo);
    out.add(registrable(domain) === registrable(fromDomain) ? 'replyto:same' : 'replyto:differs');
    addDomain('replyto:', domain, out);
  }
  const mailer = first(m.headers, 'x-mailer') ?? first(m.headers, 'user-agent');
  out.add(mailer ? `mailer:${mailer.toLowerCase().replace(/[\d.]+/g, '#').replace(/\s+/g, ' ').slice(0, 30)}` : 'mailer:none');
  const type = first(m.headers, 'content-type');
  const [mime, ...params] = (type ?? 'text/plain').toLowerCase().split(';');
  out.add(`ct:${mime!.trim().slice(0, 40)}`);
  const charset = params.map((p) => p.trim()).find((p) => p.startsWith('charset='));
  if (charset) out.add(`charset:${charset.slice(8).replace(/["']/g, '').trim().slice(0, 30)}`);
  const encoding = first(m.headers, 'content-transfer-encoding');
  if (encoding) out.add(`cte:${encoding.toLowerCase().trim().slice(0, 20)}`);
  for (const a of m.attachments.slice(0, 20)) out.add(`att:${a.contentType.toLowerCase().slice(0, 60)}`);
  out.add(`att:count:${bucket(m.attachments.length)}`);
  const messageId = first(m.headers, 'message-id');
  const idDomain = messageId?.match(/@([^>\s]+)/)?.[1]?.toLowerCase();
  out.add(!messageId ? 'msgid:none' : !idDomain ? 'msgid:bare' : registrable(idDomain) === registrable(fromDomain) ? 'msgid:from-domain' : 'msgid:other');
  if (!first(m.headers, 'date')) out.add('date:none');
  if (!first(m.headers, 'to')) out.add('to:none');
  for (const name of ['in-reply-to', 'references', 'list-id', 'list-unsubscribe', 'organization', 'x-originating-ip', 'mime-version']) {
    out.add(`hdr:${name}:${first(m.headers, name) === undefined ? 'no' : 'yes'}`);
  }
  const listId = first(m.headers, 'list-id')?.match(/<([^>]+)>/)?.[1];
  if (listId) out.add(`list:${listId.toLowerCase().slice(0, 80)}`);
  for (const name of ['precedence', 'x-priority', 'x-msmail-priority', 'importance']) {
    const value = first(m.headers, name);
    if (value) out.add(`hdr:${name}:${value.toLowerCase().trim().slice(0, 20)}`);
  }
}

function subjectTokens(subject: string, out: TokenSet): void {
  if (!subject.trim()) {
    out.add('s:none');
    return;
  }
  if (/^\s*(re|aw|sv)\s*:/i.test(subject)) out.add('s:reply');
  if (/^\s*(fwd?|wg)\s*:/i.test(subject)) out.add('s:forward');
  const letters = subject.replace(/[^\p{L}]/gu, '');
  if (letters.length >= 6 && letters === letters.toUpperCase() && letters !== letters.toLowerCase()) out.add('s:all-caps');
  if (subject.includes('!')) out.add('s:!');
  if (subject.includes('$')) out.add('s:$');
  for (const w of subject.toLowerCase().match(WORD) ?? []) {
    const word = trimWord(w);
    if (word.length >= MIN_WORD - 1 && word.length <= MAX_WORD) out.add(`s:${word}`);
  }
}

/** The links of a message's text and HTML (at most MAX_LINKS) and the images of its HTML. */
function collectLinks(text: string, html: string): { urls: Set<string>; images: Set<string> } {
  // The same link often comes twice (in the HTML and in the text mailparser made of it, or in both parts): counted once.
  const urls = new Set<string>();
  const images = new Set<string>();
  for (const match of html.matchAll(HREF)) {
    if (match[1]!.toLowerCase() === 'src') images.add(match[2]!);
    else if (urls.size < MAX_LINKS) urls.add(match[2]!);
  }
  for (const match of text.matchAll(URL_IN_TEXT)) {
    if (urls.size >= MAX_LINKS) break;
    if (!images.has(match[0])) urls.add(match[0]);
  }
  return { urls, images };
}

/**
 * The registrable domains (eTLD+1) a message links to, as URI blocklists are asked about them (RFC 5782 2.3),
 * in the order they come, at most `max`; links to IP addresses are left out. Reads what messageTokens reads.
 */
export function linkDomains(m: { text: string | null; html: string | null }, max: number): string[] {
  const html = m.html ? m.html.slice(0, MAX_TEXT_CHARS) : '';
  const text = (m.text ?? '').slice(0, MAX_TEXT_CHARS);
  const domains = new Set<string>();
  for (const url of collectLinks(text, html).urls) {
    if (domains.size >= max) break;
    const host = hostOf(url);
    if (!host || /^[\d.]+$/.test(host.name) || host.name.startsWith('[') || !host.name.includes('.')) continue;
    domains.add(registrable(host.name));
  }
  return [...domains];
}

function linkTokens(text: string, html: string, out: TokenSet): void {
  const { urls, images } = collectLinks(text, html);
  let links = 0;
  for (const url of urls) {
    const host = hostOf(url);
    if (host === null) continue;
    links++;
    if (host.userinfo) out.add('url:userinfo');
    if (/^[\d.]+$/.test(host.name) || host.name.startsWith('[')) out.add('url:ip');
    else addDomain('url:', host.name, out);
    if (/^http:/i.test(url)) out.add('url:http');
  }
  out.add(`links:${bucket(links)}`);
  out.add(`images:${bucket(images.size)}`);
}

function htmlTokens(html: string, out: TokenSet): void {
  out.add('html');
  for (const match of html.matchAll(TAG)) {
    const tag = match[1]!.toLowerCase();
    if (TAGS.has(tag)) out.add(`tag:${tag}`);
  }
}

// SpamBayes's tokenizer: words of 3 to 12 (here 20) characters count as themselves; a longer one counts only
// by its first character and length, so random strings in spam do not each make a token of their own.
function bodyTokens(text: string, out: TokenSet): void {
  // An exec() loop on a regex of its own: no iterator, and no other caller's lastIndex to share.
  const words = new RegExp(WORD.source, 'gu');
  const lower = text.toLowerCase();
  for (let match = words.exec(lower); match; match = words.exec(lower)) {
    if (out.full) return;
    const word = trimWord(match[0]);
    if (word.length < MIN_WORD) continue;
    if (word.length <= MAX_WORD) out.add(word);
    else out.add(`skip:${word[0]}${Math.floor(word.length / 10) * 10}`);
  }
}

/** ' ’ - */
const isEdge = (c: number) => c === 39 || c === 0x2019 || c === 45;

/** Drops dashes and apostrophes at the ends (the first character, the last before any !s), which only wrap a word. */
function trimWord(word: string): string {
  let end = word.length;
  while (end > 0 && word.charCodeAt(end - 1) === 33) end--; // the !s a word may end with
  if (!isEdge(word.charCodeAt(0)) && !(end > 0 && isEdge(word.charCodeAt(end - 1)))) return word;
  return word.replace(/^['’-]+|['’-]+(?=!*$)/g, '');
}

function addDomain(prefix: string, domain: string, out: TokenSet): void {
  if (!domain) return;
  out.add(`${prefix}${domain}`);
  const reg = registrable(domain);
  if (reg && reg !== domain) out.add(`${prefix}@${reg}`);
}

/** The registrable part of a domain (the Public Suffix List's eTLD+1), or the name itself when it has none. */
function registrable(domain: string): string {
  if (!domain) return '';
  return getDomain(domain, { allowPrivateDomains: false }) ?? domain;
}

function hostOf(url: string): { name: string; userinfo: boolean } | null {
  const m = /^(?:[a-z][a-z0-9+.-]*:\/\/|www\.)([^/?#\s]*)/i.exec(url.trim());
  if (!m) return null;
  const authority = url.toLowerCase().startsWith('www.') ? `www.${m[1]}` : m[1]!;
  const at = authority.lastIndexOf('@');
  const name = authority.slice(at + 1).replace(/:\d*$/, '').replace(/\.$/, '').toLowerCase().slice(0, 100);
  if (!name || !/^[a-z0-9.[\]:-]+$/.test(name)) return null;
  return { name, userinfo: at >= 0 };
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase().slice(0, 100);
}

function first(headers: HeaderFields, name: string): string | undefined {
  return headers[name]?.[0];
}

/** 0, 1, 2-3, 4-7, 8-15, 16+ */
function bucket(n: number): string {
  if (n <= 1) return String(n);
  if (n >= 16) return '16+';
  const low = 2 ** Math.floor(Math.log2(n));
  return `${low}-${low * 2 - 1}`;
}

/** Text of HTML when mailparser gave none: tags and entities dropped (only for words, never for display). */
function stripTags(html: string): string {
  return html.replace(/<(style|script)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' ').replace(/&nbsp;/gi, ' ').replace(/&[a-z#0-9]+;/gi, '');
}

/** A token in words an owner can read, for the reasons shown with a verdict. */
export function describeToken(token: string): string {
  const colon = token.indexOf(':');
  const kind = colon < 0 ? '' : token.slice(0, colon);
  const rest = token.slice(colon + 1);
  switch (kind) {
    case '':
      return token === 'html' ? 'an HTML body' : `the word "${token}"`;
    case 's':
      return rest === '!' || rest === '$' ? `a "${rest}" in the subject` : `"${rest}" in the subject`;
    case 'url':
      return rest === 'ip' ? 'a link to an IP address' : rest === 'userinfo' ? 'a link with a user name in it' : rest === 'http' ? 'an unencrypted (http:) link' : `a link to ${rest.replace(/^@/, '')}`;
    case 'from':
      return rest === 'none' ? 'no From address' : rest === 'several' ? 'several From addresses' : rest === 'digits' ? 'digits in the sender\'s address' : `the sender ${rest.replace(/^@/, '')}`;
    case 'fromname':
      return rest === 'none' ? 'a sender without a name' : `"${rest}" in the sender's name`;
    case 'replyto':
      return rest === 'differs' ? 'a Reply-To in another domain than From' : rest === 'same' ? 'a Reply-To in the From domain' : `Reply-To ${rest.replace(/^@/, '')}`;
    case 'skip':
      return `a run of ${rest.slice(1)}+ characters starting "${rest[0]}"`;
    case 'tag':
      return `HTML <${rest}> tags`;
    case 'ct':
      return `a ${rest} message`;
    case 'charset':
      return `the character set ${rest}`;
    case 'cte':
      return `the ${rest} transfer encoding`;
    case 'mailer':
      return rest === 'none' ? 'no X-Mailer field' : `the mailer "${rest}"`;
    case 'att':
      return rest.startsWith('count:') ? `${rest.slice(6)} attachments` : `a ${rest} attachment`;
    case 'msgid':
      return rest === 'none' ? 'no Message-ID' : rest === 'bare' ? 'a Message-ID without a domain' : rest === 'from-domain' ? "a Message-ID from the sender's domain" : "a Message-ID from another domain than the sender's";
    case 'date':
      return 'no Date field';
    case 'to':
      return 'no To field';
    case 'list':
      return `the mailing list ${rest}`;
    case 'links':
    case 'images':
      return `${rest} ${kind}`;
    case 'hdr': {
      const [name, value] = [rest.slice(0, rest.lastIndexOf(':')), rest.slice(rest.lastIndexOf(':') + 1)];
      return value === 'yes' ? `a ${name} field` : value === 'no' ? `no ${name} field` : `${name}: ${value}`;
    }
    default:
      return `the message's ${token}`;
  }
}
