// The words of a reply and of a forward, as mail clients write them: the subject with `Re: ` or `Fwd: ` once,
// the original quoted below the new text ("On <date>, <name> wrote:" and `> ` lines, a blockquote in HTML) or
// set out as a forwarded block; and the other way round, the new text of a received reply without its quoted
// history and signature (email-reply-parser). Pure: no SQL, no addresses decided here.
import EmailReplyParser from 'email-reply-parser';
import { htmlToText } from './compose.ts';
import { escapeHtml } from '../pages/html.ts';

/** What a reply or forward shows of the message it answers. */
export interface Original {
  from: { name: string | null; address: string };
  to: Array<{ name: string | null; address: string }>;
  subject: string;
  /** ms since epoch: when the box received (or sent) it. */
  date: number;
  text: string | null;
  html: string | null;
}

// email-reply-parser reads the text line by line from the end, with regexes that cost quadratic time on some
// shapes of text (measured: 1.5 s for 64 KiB of "On On On"); the new text of a reply is at the top, so only
// the first this-many characters are read.
export const EXTRACT_MAX_CHARS = 8 * 1024;

/**
 * The new text of a received message: without the quoted history ("On ... wrote:", `>` lines, Outlook's
 * "From: ... Sent: ..." block) and the signature ("-- ", "Sent from my iPhone", "Best regards, ..."). Null
 * when the message has no text at all; the whole text (trimmed) when nothing in it is a quote.
 */
export function extractReply(text: string | null): string | null {
  if (!text || !text.trim()) return null;
  return extract(text);
}

/**
 * extractedText of a received message. The parser costs about a millisecond of CPU for a few KB of text (it
 * reverses and re-tests every line against some fifty patterns), as much as the rest of receiving a message, so
 * it reads only mail that answers or forwards something (In-Reply-To, References, or a Re:/Fwd: subject);
 * other mail has no quoted history, and its extractedText is its text.
 */
export function extractedTextOf(m: { text: string | null; subject: string; inReplyTo: string | null; references: readonly string[] }): string | null {
  if (!m.text || !m.text.trim()) return null;
  const answers = m.inReplyTo !== null || m.references.length > 0 || ANSWERING.test(m.subject);
  return answers ? extract(m.text) : head(m.text).trim();
}

/** Subjects of replies and forwards in the languages mail clients write them: Re, Fwd, Fw, AW, WG, SV, VS, TR, RV, Odp, Antw. */
const ANSWERING = /^\s*(?:re|fwd?|aw|wg|sv|vs|tr|rv|odp|antw|r)\s*(?:\[\d+\])?\s*:/i;

const head = (text: string) => (text.length > EXTRACT_MAX_CHARS ? text.slice(0, EXTRACT_MAX_CHARS) : text);

function extract(text: string): string {
  const start = head(text);
  const visible = new EmailReplyParser().read(start).getVisibleText().trim();
  return visible || start.trim();
}

const RE = /^\s*re\s*(?:\[\d+\])?\s*:/i;
const FWD = /^\s*(?:fwd?|fw)\s*:/i;

/** `Re: ` in front, once: a subject that already starts with Re: (Re[2]:) is kept as it is. */
export const replySubject = (subject: string) => (RE.test(subject) ? subject : `Re: ${subject}`);

/** `Fwd: ` in front, once (Fw: and Fwd: count). */
export const forwardSubject = (subject: string) => (FWD.test(subject) ? subject : `Fwd: ${subject}`);

// A stranger's name or subject, decoded, may hold line breaks: one line here, as in the headers.
const oneLine = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
const person = (m: { name: string | null; address: string }) => (m.name ? `${oneLine(m.name)} <${m.address}>` : m.address);
// The date as RFC 5322 writes one (3.3), in UTC: the box does not know the reader's time zone.
const dateOf = (ms: number) => new Date(ms).toUTCString().replace('GMT', '+0000');
/** The original's text: its text part, or its HTML's words when it has none. */
const textOf = (o: Original) => (o.text ?? (o.html ? htmlToText(o.html) : '')).replace(/\r\n/g, '\n').replace(/\n+$/, '');
const htmlLines = (text: string) => escapeHtml(text).replace(/\n/g, '<br>\n');
/** The inside of <body> of an HTML document (or the whole of a fragment), to sit inside our own block. */
const bodyOf = (html: string) => /<body\b[^>]*>([\s\S]*)<\/body\s*>/i.exec(html)?.[1] ?? html.replace(/<\/?(?:html|head)\b[^>]*>|<head\b[\s\S]*?<\/head\s*>/gi, '');

export const attribution = (o: Original) => `On ${dateOf(o.date)}, ${person(o.from)} wrote:`;

/** A reply's text: the new text, then the original quoted with `> ` on every line. */
export function quotedText(text: string, o: Original): string {
  const quoted = textOf(o)
    .split('\n')
    .map((l) => (l.startsWith('>') ? `>${l}` : `> ${l}`))
    .join('\n');
  return `${text.replace(/\n+$/, '')}\n\n${attribution(o)}\n${quoted}\n`;
}

/** A reply's HTML: the new HTML, then the original in a blockquote (its text, escaped: never its markup). */
export function quotedHtml(html: string, o: Original): string {
  return (
    `${html}\n<div class="mailwright_quote"><div>${escapeHtml(attribution(o))}</div>\n` +
    `<blockquote style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">${htmlLines(textOf(o))}</blockquote></div>\n`
  );
}

const FORWARDED = '---------- Forwarded message ---------';

const forwardedFields = (o: Original): Array<[string, string]> => [
  ['From', person(o.from)],
  ['Date', dateOf(o.date)],
  ['Subject', oneLine(o.subject)],
  ['To', o.to.map(person).join(', ')],
];

/** A forward's text: the note (if any), then the forwarded block with the original's text. */
export function forwardedText(note: string | undefined, o: Original): string {
  const head = forwardedFields(o).map(([k, v]) => `${k}: ${v}`).join('\n');
  return `${note ? `${note.replace(/\n+$/, '')}\n\n` : ''}${FORWARDED}\n${head}\n\n${textOf(o)}\n`;
}

/** A forward's HTML: the note, the forwarded block, then the original's own HTML (or its text). */
export function forwardedHtml(note: string | undefined, o: Original): string {
  const head = forwardedFields(o).map(([k, v]) => `${k}: ${escapeHtml(v)}`).join('<br>\n');
  const body = o.html ? bodyOf(o.html) : htmlLines(textOf(o));
  return `${note ?? ''}\n<div class="mailwright_forward"><div>${FORWARDED}<br>\n${head}</div><br>\n${body}</div>\n`;
}
