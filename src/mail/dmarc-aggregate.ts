// Reads a DMARC aggregate report (RFC 7489 7.2.1.1 and appendix C's schema) into typed values, defensively:
// fast-xml-parser with entities off, and any DOCTYPE refused before parsing, so no entity is ever expanded or
// fetched (XXE, billion laughs); rows bounded; dates and addresses checked. Pure: a ReportRejected says why.
import { isIP } from 'node:net';
import { XMLParser } from 'fast-xml-parser';
import { ReportRejected } from './report-files.ts';

/** More rows than any real daily report has (Google's largest hold a few thousand); counted before parsing. */
export const MAX_DMARC_ROWS = 20_000;

export interface DmarcRow {
  sourceIp: string;
  count: number;
  disposition: string;
  /** policy_evaluated: the DKIM and SPF results DMARC used, that is with alignment. */
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  headerFrom: string;
  envelopeFrom: string | null;
  auth: { dkim: Array<{ domain: string; selector?: string; result: string }>; spf: Array<{ domain: string; scope?: string; result: string }> };
  reasons: Array<{ type: string; comment?: string }>;
}

export interface DmarcReport {
  orgName: string;
  email: string;
  reportId: string;
  /** Milliseconds since the epoch (the report gives seconds). */
  begin: number;
  end: number;
  policy: { domain: string; adkim: string; aspf: string; p: string; sp: string | null; pct: number | null };
  rows: DmarcRow[];
}

const ARRAYS = new Set(['feedback.record', 'feedback.record.auth_results.dkim', 'feedback.record.auth_results.spf', 'feedback.record.row.policy_evaluated.reason']);

const parser = new XMLParser({
  processEntities: false,
  htmlEntities: false,
  ignoreAttributes: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  parseTagValue: false,
  removeNSPrefix: true,
  trimValues: true,
  maxNestedTags: 20,
  isArray: (_name, jPath) => ARRAYS.has(String(jPath)),
});

type Node = Record<string, unknown>;

export function readDmarcReport(bytes: Buffer): DmarcReport {
  const xml = bytes.toString('utf8');
  // No report needs a DOCTYPE; refusing it outright means no entity declaration is ever read, internal or external.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new ReportRejected('the XML declares a DOCTYPE or entities, which reports never do (refused unread: XXE)');
  // Counted before parsing: a report of tiny rows is refused without building them.
  if (moreRecordsThan(xml, MAX_DMARC_ROWS)) throw new ReportRejected(`the report has more than ${MAX_DMARC_ROWS} rows`);
  let doc: Node;
  try {
    doc = parser.parse(xml, true) as Node;
  } catch (err) {
    throw new ReportRejected(`the XML could not be parsed (${(err as Error).message.split('\n')[0]})`);
  }
  const feedback = obj(doc.feedback, 'feedback');
  const meta = obj(feedback.report_metadata, 'report_metadata');
  const range = obj(meta.date_range, 'report_metadata.date_range');
  const begin = epoch(range.begin, 'date_range.begin');
  const end = epoch(range.end, 'date_range.end');
  if (begin > end) throw new ReportRejected('malformed date_range: begin is after end');
  const published = obj(feedback.policy_published, 'policy_published');
  const records = (feedback.record ?? []) as unknown[];
  if (!Array.isArray(records)) throw new ReportRejected('malformed record list');
  if (records.length > MAX_DMARC_ROWS) throw new ReportRejected(`the report has more than ${MAX_DMARC_ROWS} rows`);
  return {
    orgName: text(meta.org_name, 'org_name', 200),
    email: text(meta.email, 'email', 320),
    reportId: text(meta.report_id, 'report_id', 200),
    begin,
    end,
    policy: {
      domain: text(published.domain, 'policy_published.domain', 253).toLowerCase(),
      adkim: optional(published.adkim) ?? 'r',
      aspf: optional(published.aspf) ?? 'r',
      p: text(published.p, 'policy_published.p', 20),
      sp: optional(published.sp),
      pct: optional(published.pct) === null ? null : Number(optional(published.pct)),
    },
    rows: records.map((r, i) => row(obj(r, `record ${i + 1}`), i + 1)),
  };
}

function moreRecordsThan(xml: string, max: number): boolean {
  const record = /<(?:\w+:)?record[\s>]/g;
  let n = 0;
  while (record.exec(xml)) if (++n > max) return true;
  return false;
}

function row(r: Node, n: number): DmarcRow {
  const rowNode = obj(r.row, `record ${n}: row`);
  const evaluated = obj(rowNode.policy_evaluated, `record ${n}: policy_evaluated`);
  const ids = obj(r.identifiers, `record ${n}: identifiers`);
  const auth = (r.auth_results ?? {}) as Node;
  const sourceIp = text(rowNode.source_ip, `record ${n}: source_ip`, 45);
  if (!isIP(sourceIp)) throw new ReportRejected(`record ${n}: source_ip "${sourceIp.slice(0, 45)}" is not an IP address`);
  const count = Number(text(rowNode.count, `record ${n}: count`, 12));
  if (!Number.isSafeInteger(count) || count < 0) throw new ReportRejected(`record ${n}: count is not a whole number`);
  return {
    sourceIp,
    count,
    disposition: text(evaluated.disposition, `record ${n}: disposition`, 20).toLowerCase(),
    dkim: passOrFail(evaluated.dkim),
    spf: passOrFail(evaluated.spf),
    headerFrom: text(ids.header_from, `record ${n}: header_from`, 253).toLowerCase(),
    envelopeFrom: optional(ids.envelope_from)?.toLowerCase() ?? null,
    auth: {
      dkim: list(auth.dkim).map((d) => ({ domain: optional(d.domain) ?? '', ...(optional(d.selector) ? { selector: optional(d.selector)! } : {}), result: optional(d.result) ?? '' })),
      spf: list(auth.spf).map((s) => ({ domain: optional(s.domain) ?? '', ...(optional(s.scope) ? { scope: optional(s.scope)! } : {}), result: optional(s.result) ?? '' })),
    },
    reasons: list(evaluated.reason).map((x) => ({ type: optional(x.type) ?? '', ...(optional(x.comment) ? { comment: optional(x.comment)! } : {}) })),
  };
}

const passOrFail = (v: unknown): 'pass' | 'fail' => (optional(v)?.toLowerCase() === 'pass' ? 'pass' : 'fail');

function obj(v: unknown, what: string): Node {
  if (v && typeof v === 'object' && !Array.isArray(v)) return v as Node;
  throw new ReportRejected(`not a DMARC aggregate report: ${what} is missing`);
}

function list(v: unknown): Node[] {
  return (Array.isArray(v) ? v : []).filter((x): x is Node => !!x && typeof x === 'object').slice(0, 20);
}

function optional(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v.slice(0, 500) : null;
}

function text(v: unknown, what: string, max: number): string {
  const s = optional(v);
  if (s === null) throw new ReportRejected(`not a DMARC aggregate report: ${what} is missing`);
  if (s.length > max) throw new ReportRejected(`${what} is longer than ${max} characters`);
  return s;
}

// Seconds since the epoch (RFC 7489 appendix C: xs:integer); between 2000 and 2100 or it is not a report's date.
function epoch(v: unknown, what: string): number {
  const s = optional(v);
  if (s === null || !/^\d{1,12}$/.test(s)) throw new ReportRejected(`malformed ${what}: "${String(s ?? '').slice(0, 40)}" is not a time in seconds`);
  const ms = Number(s) * 1000;
  if (ms < Date.UTC(2000, 0, 1) || ms > Date.UTC(2100, 0, 1)) throw new ReportRejected(`malformed ${what}: ${s} is not a plausible time`);
  return ms;
}
