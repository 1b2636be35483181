// A report received at a report address, read on the analyze workers: found and decompressed (report-files.ts),
// parsed (dmarc-aggregate.ts, tls-report.ts), and for a DMARC report the PTR names of the sources that fail
// alignment in volume looked up, for the domain.dmarc_failure event the writer may raise. Never throws: what
// cannot be read becomes a rejection with its reason, kept aside by the writer.
import type { DnsLookup } from '../dns/cache.ts';
import { arpaName } from '../dns/resolver.ts';
import type { ParsedMessage } from './parse.ts';
import { readDmarcReport, type DmarcReport } from './dmarc-aggregate.ts';
import { readTlsReport, type TlsReport } from './tls-report.ts';
import { reportBytes, ReportRejected, type ReportFormat } from './report-files.ts';

export type { ReportFormat } from './report-files.ts';

/**
 * A source IP failing DMARC alignment (neither aligned DKIM nor aligned SPF) in at least this many messages of
 * one report is announced by domain.dmarc_failure, once per domain and source: fewer is forwarding noise.
 */
export const DMARC_FAILURE_THRESHOLD = 10;
/**
 * At most this many sources are announced per report, most failing messages first (their PTR names looked up
 * here): a report naming thousands of failing sources raises 20 events, not thousands; the rest are announced
 * when a later report names them again.
 */
export const MAX_ANNOUNCED_PER_REPORT = 20;

export type ReportReading =
  | { format: 'dmarc'; report: DmarcReport; ptrs: Record<string, string | null> }
  | { format: 'tls'; report: TlsReport }
  | { format: ReportFormat; rejected: string; notAReport: boolean; bytes: number };

export async function readReceivedReport(format: ReportFormat, parsed: Pick<ParsedMessage, 'attachments' | 'text'>, dns: DnsLookup): Promise<ReportReading> {
  const size = parsed.attachments.reduce((n, a) => n + a.content.length, 0) + (parsed.text?.length ?? 0);
  try {
    const { bytes } = reportBytes(format, parsed.attachments, parsed.text);
    if (format === 'tls') return { format, report: readTlsReport(bytes) };
    const report = readDmarcReport(bytes);
    return { format, report, ptrs: await ptrsOf(failingSources(report), dns) };
  } catch (err) {
    if (err instanceof ReportRejected) return { format, rejected: err.message, notAReport: err.notAReport, bytes: size };
    // A bug of ours or a library's on hostile input: still kept aside, with what went wrong.
    return { format, rejected: `the report could not be read (${err instanceof Error ? err.message : String(err)})`, notAReport: false, bytes: size };
  }
}

/** Messages failing alignment per source IP, for the sources at or over the threshold, most first. */
export function failingSources(report: DmarcReport): Map<string, number> {
  const failing = new Map<string, number>();
  for (const r of report.rows) if (r.dkim !== 'pass' && r.spf !== 'pass') failing.set(r.sourceIp, (failing.get(r.sourceIp) ?? 0) + r.count);
  return new Map([...failing].filter(([, n]) => n >= DMARC_FAILURE_THRESHOLD).sort((a, b) => b[1] - a[1]));
}

async function ptrsOf(sources: Map<string, number>, dns: DnsLookup): Promise<Record<string, string | null>> {
  const ips = [...sources.keys()].slice(0, MAX_ANNOUNCED_PER_REPORT);
  const names = await Promise.all(ips.map((ip) => ptrOf(ip, dns)));
  return Object.fromEntries(ips.map((ip, i) => [ip, names[i]]));
}

export async function ptrOf(ip: string, dns: DnsLookup): Promise<string | null> {
  try {
    const names = (await dns.resolve(arpaName(ip), 'PTR')) as string[];
    return names[0]?.toLowerCase().replace(/\.$/, '') ?? null;
  } catch {
    return null;
  }
}
