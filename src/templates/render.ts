// Rendering a template's content with data, the same for a preview, a test send and a real send: a pure
// function with no code execution. Placeholders are `{{ key }}` and nothing else (no sections, partials or
// unescaped forms: Mustache and Handlebars render a superset of this syntax and resolve names through the
// prototype chain), values are looked up as own keys only, escaped per part, and every part has a bound.
import { parseMailbox } from '../mail/addresses.ts';
import { UNSUBSCRIBE_KEY, UNSUBSCRIBE_PLACEHOLDER, type TemplateContent, type VariableType } from './content.ts';
import { findingList, type Finding } from './findings.ts';

export type { Finding } from './findings.ts';

export interface Rendered {
  subject: string;
  html: string;
  text: string;
  /** At most MAX_FINDINGS (findings.ts), errors first. */
  findings: Finding[];
  /** How many more findings there were. */
  findingsOmitted: number;
}

export interface RenderOptions {
  /** Missing values fall back to the sample data (previews and test sends), never in a real send. */
  useSampleData: boolean;
  /** Leave {{unsubscribe_url}} for the box to fill per recipient (marketing mail with the box's unsubscribe). */
  keepUnsubscribe: boolean;
}

/** Each rendered body part; a value repeated past it is a template error, not a 20 MB email. */
export const MAX_RENDERED_PART = 2 * 1024 * 1024;
export const MAX_SUBJECT = 998; // RFC 5322 2.1.1
export const VARIABLE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
// Any {{ ... }}; what is inside decides whether it is a placeholder.
const BRACES = /\{\{([^{}]{0,200})\}\}/g;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** Why `value` is not a `type`, or null when it is one. */
export function typeProblem(type: VariableType, value: unknown): string | null {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  switch (type) {
    case 'string':
      return typeof value === 'string' ? null : `expected a string, got ${got}`;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : `expected a finite number, got ${got}`;
    case 'boolean':
      return typeof value === 'boolean' ? null : `expected true or false, got ${got}`;
    case 'date':
      if (typeof value !== 'string') return `expected an ISO 8601 date string, got ${got}`;
      return ISO_DATE.test(value) && !Number.isNaN(Date.parse(value)) ? null : 'expected an ISO 8601 date such as 2026-11-25 or 2026-11-25T09:30:00Z';
    case 'url': {
      if (typeof value !== 'string') return `expected a URL string, got ${got}`;
      try {
        const url = new URL(value);
        return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? null : 'expected an http, https or mailto URL';
      } catch {
        return 'expected an absolute URL such as https://example.com/path';
      }
    }
    case 'email':
      if (typeof value !== 'string') return `expected an address string, got ${got}`;
      return parseMailbox(value).ok ? null : 'expected an address such as ada@example.com';
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]);
// RFC 5322: a header value holds no CR or LF; other control characters would make the send a 400.
const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ').replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');

const scalar = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined);
const own = (o: Record<string, unknown>, key: string) => (Object.hasOwn(o, key) && o[key] !== null && o[key] !== undefined ? o[key] : undefined);

/** The keys of the well-formed placeholders in `part`, in order. */
export function placeholders(part: string): string[] {
  return [...part.matchAll(BRACES)].map((m) => m[1].trim()).filter((k) => VARIABLE_KEY.test(k));
}

export function render(content: TemplateContent, data: Record<string, unknown>, options: RenderOptions): Rendered {
  const findings = findingList();
  const declared = new Map(content.variables.map((v) => [v.key, v]));
  const values = new Map<string, string>();

  for (const v of content.variables) {
    const value = own(data, v.key) ?? (options.useSampleData ? own(content.sampleData, v.key) : undefined);
    if (value === undefined) {
      if (v.required) findings.note('error', () => ({ code: 'missing_variable', message: `${v.key} is required and has no value`, variable: v.key }));
      values.set(v.key, '');
      continue;
    }
    const problem = typeProblem(v.type, value);
    if (problem) findings.note('error', () => ({ code: 'invalid_type', message: `${v.key}: ${problem}`, variable: v.key }));
    values.set(v.key, problem ? '' : String(value));
  }

  const used = new Set<string>();
  const warned = new Set<string>();
  const fill = (part: string, escape: (s: string) => string, name: string, max: number): string => {
    let size = 0;
    let tooLarge = false;
    const out = part.replace(BRACES, (whole, inner: string) => {
      if (tooLarge) return '';
      const key = inner.trim();
      let value: string;
      if (!VARIABLE_KEY.test(key)) {
        if (!warned.has(whole)) findings.note('warning', () => ({ code: 'invalid_placeholder', message: `${whole} in the ${name} is not a placeholder (write {{variable_key}}) and is left as written` }));
        warned.add(whole);
        value = whole;
      } else if (key === UNSUBSCRIBE_KEY && !declared.has(key)) {
        value = options.keepUnsubscribe ? UNSUBSCRIBE_PLACEHOLDER : '';
      } else if (declared.has(key)) {
        used.add(key);
        value = escape(values.get(key)!);
      } else {
        if (!warned.has(key)) findings.note('warning', () => ({ code: 'undeclared_variable', message: `{{${key}}} is used but not declared in variables`, variable: key }));
        warned.add(key);
        value = escape(scalar(own(data, key)) ?? '');
      }
      size += value.length;
      if (size > max) tooLarge = true;
      return value;
    });
    if (!tooLarge && out.length <= max) return out;
    findings.note('error', () => ({ code: 'too_large', message: `the rendered ${name} is over ${max} characters` }));
    return '';
  };

  const subject = fill(content.subjectTemplate, oneLine, 'subject', MAX_SUBJECT);
  const html = fill(content.htmlTemplate, escapeHtml, 'HTML', MAX_RENDERED_PART);
  const text = fill(content.textTemplate, (s) => s, 'text', MAX_RENDERED_PART);

  for (const v of content.variables) {
    if (!used.has(v.key)) findings.note('info', () => ({ code: 'unused_variable', message: `${v.key} is declared but no part uses it`, variable: v.key }));
  }
  for (const f of contentFindings(content)) findings.note(f.severity, () => f);
  const { findings: kept, omitted } = findings.done();
  return { subject, html, text, findings: kept, findingsOmitted: omitted };
}

/** What is worth saying about the content itself, whatever the data (at most four findings). */
function contentFindings(c: TemplateContent): Finding[] {
  const out: Finding[] = [];
  const html = c.htmlTemplate;
  if (!html.trim() && !c.textTemplate.trim()) out.push({ severity: 'error', code: 'no_content', message: 'the template has neither HTML nor text' });
  else if (!c.textTemplate.trim()) out.push({ severity: 'warning', code: 'no_text_part', message: 'no text part: mail clients without HTML and spam filters see one derived from the HTML' });
  if (/<script\b[^>]*\bsrc\s*=/i.test(html)) out.push({ severity: 'warning', code: 'remote_script', message: 'the HTML loads a script: mail clients never run it and spam filters count it against the message' });
  else if (/<script\b|\son[a-z]+\s*=|javascript:/i.test(html)) out.push({ severity: 'warning', code: 'script', message: 'the HTML has a script or an event handler: mail clients strip them and spam filters count them against the message' });
  if (/<form\b/i.test(html)) out.push({ severity: 'warning', code: 'form', message: 'the HTML has a form: most mail clients disable forms and some flag them as phishing' });
  if (c.messageClass === 'marketing' && !`${html}\n${c.textTemplate}`.match(/\{\{\s*unsubscribe_url\s*\}\}/)) {
    out.push({ severity: 'warning', code: 'missing_unsubscribe', message: 'marketing content should carry a visible {{unsubscribe_url}} link (the box fills it per recipient)' });
  }
  return out;
}

export const hasErrors = (findings: Finding[]) => findings.some((f) => f.severity === 'error');
