// E-mail addresses as API callers write them ("a@b.example" or "Name <a@b.example>") -> {name, address}
// with the domain in its ASCII form. Parsing is nodemailer's addressparser; this adds what a sender must
// refuse: groups, several addresses where one is meant, control characters, non-ASCII local parts
// (SMTPUTF8 is not offered), and anything that is not a plain domain after the @.
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

export function parseMailbox(input: string): Parsed {
  if (CONTROL.test(input)) return { ok: false, reason: 'must not contain control characters (CR, LF, NUL, ...)' };
  if (input.length > 512) return { ok: false, reason: 'is longer than 512 characters' };
  const parsed = addressparser(input.trim());
  if (parsed.length !== 1 || parsed[0].group !== undefined) return { ok: false, reason: 'must be exactly one address, as a@example.com or "Name <a@example.com>"' };
  if (!parsed[0].address) return { ok: false, reason: `"${input.trim()}" is not an e-mail address` };
  return checkAddress(parsed[0].address, parsed[0].name);
}

export function checkAddress(address: string, name = ''): Parsed {
  const at = address.lastIndexOf('@');
  if (at < 1) return { ok: false, reason: `"${address}" is not an e-mail address` };
  const local = address.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) return { ok: false, reason: `"${address}" has a local part this box cannot send to (plain ASCII only)` };
  const domain = normaliseDomain(address.slice(at + 1));
  if (!domain.ok) return { ok: false, reason: `the domain of "${address}" ${domain.reason}` };
  const clean = name.trim();
  return { ok: true, mailbox: { ...(clean ? { name: clean } : {}), address: `${local}@${domain.name}` } };
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
