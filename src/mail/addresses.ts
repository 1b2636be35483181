// E-mail addresses as API callers write them ("a@b.example" or "Name <a@b.example>") -> {name, address}
// with the domain in its ASCII form. parseMailbox accepts only a few exact shapes and refuses everything a
// lenient parser would silently turn into another mailbox; checkAddress refuses what a sender must not send
// to: several @, non-ASCII or quoted local parts (SMTPUTF8 is not offered), anything but a plain domain.
import addressparser from 'nodemailer/lib/addressparser';
import { normaliseDomain } from './domain-name.ts';

export interface Mailbox {
  name?: string;
  address: string;
}

type Parsed = { ok: true; mailbox: Mailbox } | { ok: false; reason: string };

// RFC 5321 4.1.2 dot-atom local part (quoted local parts are legal but a trap for every peer; refuse them).
export const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

// The shapes parseMailbox accepts, after trimming (RFC 5322 3.4 without comments, obsolete forms or groups):
//   addr-spec                      a@example.com
//   "<" addr-spec ">"              <a@example.com>
//   words *" " "<" addr-spec ">"   Ada Lovelace <a@example.com>   (words: no space and none of ()<>[]:;@\,")
//   quoted *" " "<" addr-spec ">"  "Lovelace, Ada" <a@example.com> (one quoted string; \ escapes the next char)
// The addr-spec holds no space and none of ()<>[]\,;:"; checkAddress then judges its parts.
const ADDR = /([^\s()<>\[\]\\,;:"]+)/u;
const PHRASE = /([^ ()<>\[\]:;@\\,"]+(?: +[^ ()<>\[\]:;@\\,"]+)*)/u;
const QUOTED = /"((?:[^"\\]|\\.)*)"/u;
const SHAPE = new RegExp(`^(?:${ADDR.source}|(?:(?:${QUOTED.source}|${PHRASE.source}) *)?<${ADDR.source}>)$`, 'u');
// RFC 2047 encoded-words are the header's business: in a name they would be decoded by the reader into
// text that was never checked here (PROTO-18: a name that reads as another address).
const ENCODED_WORD = /=\?[^?\s]+\?[bq]\?[^?\s]*\?=/i;
const HOW = 'write a@example.com or Name <a@example.com>';
const words = (s: string) => s.trim().replace(/ +/g, ' ');

// The verdicts on the strings seen last (parseMailbox is a pure function of its input): a sender's From comes
// again with every send, and running both parsers on it cost about 7 µs of each. Cleared when full.
const verdicts = new Map<string, Parsed>();
const MAX_VERDICTS = 256;

/** A mailbox as a send's field takes it back (parseMailbox's shapes): `Name <a@b>`, the name quoted when it must be. */
export function mailboxText(m: Mailbox): string {
  if (!m.name) return m.address;
  return PHRASE_ONLY.test(m.name) ? `${m.name} <${m.address}>` : `"${m.name.replace(/["\\]/g, '\\$&')}" <${m.address}>`;
}
const PHRASE_ONLY = new RegExp(`^${PHRASE.source}$`, 'u');

export function parseMailbox(input: string): Parsed {
  let verdict = verdicts.get(input);
  if (!verdict) {
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdict = judgeMailbox(input);
    verdicts.set(input, verdict);
  }
  // A copy each time: callers own the mailbox they get.
  return verdict.ok ? { ok: true, mailbox: { ...verdict.mailbox } } : verdict;
}

function judgeMailbox(input: string): Parsed {
  if (CONTROL.test(input)) return { ok: false, reason: 'must not contain control characters (CR, LF, NUL, ...)' };
  if (input.length > 512) return { ok: false, reason: 'is longer than 512 characters' };
  const text = input.trim();
  const shape = SHAPE.exec(text);
  if (!shape) return { ok: false, reason: whyNot(text) };
  const [, bare, quoted, phrase, angled] = shape;
  const address = bare ?? angled;
  // A phrase is words (RFC 5322 3.2.5): runs of spaces between them are one space; a quoted string is kept.
  const name = quoted !== undefined ? quoted.replace(/\\(.)/gu, '$1') : (phrase ?? '').replace(/ +/g, ' ');
  if (ENCODED_WORD.test(name)) return { ok: false, reason: 'has an encoded-word (=?...?=) in its name: give the name as plain text, any script is fine' };
  const checked = checkAddress(address, name);
  // nodemailer's parser must read this very mailbox from the input; where the two differ, refuse.
  const seen = addressparser(text);
  if (checked.ok && (seen.length !== 1 || seen[0].group !== undefined || seen[0].address !== address || words(seen[0].name) !== words(name))) {
    return { ok: false, reason: `"${text}" is ambiguous: ${HOW}` };
  }
  return checked;
}

export function checkAddress(address: string, name = ''): Parsed {
  const at = address.lastIndexOf('@');
  if (at < 1) return { ok: false, reason: `"${address}" is not an e-mail address` };
  if (address.indexOf('@') !== at) return { ok: false, reason: `"${address}" has more than one @` };
  const local = address.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) return { ok: false, reason: `"${address}" has a local part this box cannot send to (plain ASCII only)` };
  // RFC 5321 4.1.2: a Domain is sub-domains joined by dots; a final dot is not part of an address.
  if (address.endsWith('.')) return { ok: false, reason: `"${address}" ends in a dot: write the domain without it` };
  const domain = normaliseDomain(address.slice(at + 1));
  if (!domain.ok) return { ok: false, reason: `the domain of "${address}" ${domain.reason}` };
  const clean = name.trim();
  return { ok: true, mailbox: { ...(clean ? { name: clean } : {}), address: `${local}@${domain.name}` } };
}

// The clearest reason a string missed every accepted shape. Quoted strings become \u0001 first (control
// characters never get this far), so what is left is the text outside them.
function whyNot(text: string): string {
  if (!text) return 'is empty: give an address';
  const outside = text.replace(new RegExp(QUOTED.source, 'gu'), '\u0001');
  if (outside.includes('"')) return `"${text}" has an unbalanced double quote: ${HOW}, or "Last, First" <a@example.com>`;
  if (/[()]/.test(outside)) return `"${text}" has a comment in parentheses: ${HOW}`;
  if (/[,;]/.test(outside)) return 'must be exactly one address, as a@example.com or "Name <a@example.com>"';
  const opens = outside.split('<').length - 1;
  const closes = outside.split('>').length - 1;
  if (opens !== closes || opens > 1) return `"${text}" has unbalanced or repeated angle brackets: ${HOW}`;
  if (opens === 1 && !outside.endsWith('>')) return `"${text}" has text after the closing >: ${HOW}`;
  const name = opens === 1 ? outside.slice(0, outside.indexOf('<')) : '';
  if (name.includes('@')) return `"${text}" has an @ in its name: quote the name ("a@example.com" <b@example.com>) or leave it out`;
  if (name.includes('\u0001')) return `"${text}" mixes a quoted string with other words in its name: quote the whole name`;
  if (/\u0001@/.test(outside)) return `"${text}" has a quoted local part, which this box does not send to`;
  const address = opens === 1 ? outside.slice(outside.indexOf('<') + 1, -1) : outside;
  if (/\s/.test(address)) return `"${text}" has a space in the address: ${HOW}`;
  return `"${text}" is not an e-mail address: ${HOW}`;
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
