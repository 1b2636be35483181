// Finds the report in a message sent to a report address and gives back its bytes decompressed, under hard caps:
// DMARC aggregate reports come zipped, gzipped or as plain XML (RFC 7489 7.2.1.1), TLS reports gzipped or as
// JSON (RFC 8460 5.3). Pure and synchronous (the analyze workers run it); every refusal is a ReportRejected
// with the reason the owner reads, never an exception of another kind.
import { gunzipSync } from 'node:zlib';
import { Unzip, UnzipInflate } from 'fflate';
import type { ParsedAttachment } from './parse.ts';

export type ReportFormat = 'dmarc' | 'tls';

/**
 * The largest report read after decompression. A domain's daily report from Google or Microsoft is KBs to a few
 * MB; here a 9.3 MB report took 3.9 s to read on a busy shared 2-core box and ran past the analysis budget
 * when it was busier, so 5 MB (about 8,000 rows of Google's format) keeps reading well inside that budget
 * (analyze_timeout, 10 s), past which the sender would get a 451 and try again for days.
 */
export const MAX_REPORT_BYTES = 5 * 1024 * 1024;
/** Past this ratio of decompressed to compressed bytes a file is a bomb, not a report (XML rarely passes 30:1). */
export const MAX_RATIO = 100;
/** A small report may pass the ratio: up to this much decompressed is always allowed (below MAX_REPORT_BYTES). */
const RATIO_FLOOR_BYTES = 1024 * 1024;
/** A zip is read this much at a time, so one step of inflating never makes more than a few MB. */
const ZIP_SLICE = 4096;

export class ReportRejected extends Error {
  /** No part of the message looked like a report at all (the message is refused at DATA, not kept aside). */
  readonly notAReport: boolean;
  constructor(message: string, notAReport = false) {
    super(message);
    this.notAReport = notAReport;
  }
}

type Packing = 'zip' | 'gzip' | 'plain';

const DMARC_TYPES: Record<string, Packing> = {
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
  'application/gzip': 'gzip',
  'application/x-gzip': 'gzip',
  'text/xml': 'plain',
  'application/xml': 'plain',
};
const TLS_TYPES: Record<string, Packing> = {
  'application/tlsrpt+gzip': 'gzip',
  'application/tlsrpt+json': 'plain',
  'application/gzip': 'gzip',
  'application/json': 'plain',
};

/** The report's bytes, decompressed, from the message's attachments or else its text body. */
export function reportBytes(format: ReportFormat, attachments: ParsedAttachment[], text: string | null): { bytes: Buffer; file: string } {
  const part = attachments.map((a) => ({ a, packing: packingOf(format, a) })).find((p) => p.packing);
  if (part) return { bytes: unpack(part.packing!, part.a.content), file: part.a.filename };
  // Some reporters put a TLS report's JSON or a small XML report in the body itself.
  const body = text?.trim() ?? '';
  if (format === 'dmarc' && body.startsWith('<')) return { bytes: capped(Buffer.from(body)), file: 'body' };
  if (format === 'tls' && body.startsWith('{')) return { bytes: capped(Buffer.from(body)), file: 'body' };
  const kinds = format === 'dmarc' ? 'a zip, gzip or XML attachment' : 'an application/tlsrpt+gzip or +json attachment';
  throw new ReportRejected(`no report found in the message: expected ${kinds}`, true);
}

function packingOf(format: ReportFormat, a: ParsedAttachment): Packing | null {
  const declared = (format === 'dmarc' ? DMARC_TYPES : TLS_TYPES)[a.contentType.toLowerCase()];
  const sniffed = sniff(a.content);
  const name = a.filename.toLowerCase();
  const named = /\.(zip|gz|xml|json)$/.test(name);
  if (!declared && !(named && (a.contentType === 'application/octet-stream' || a.contentType.startsWith('application/')))) return null;
  // Reporters label files loosely (a gzip sent as application/zip): the bytes decide how to read them.
  return sniffed ?? declared ?? 'plain';
}

function sniff(b: Buffer): Packing | null {
  if (b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04) return 'zip';
  if (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b) return 'gzip';
  return null;
}

const limitFor = (compressed: number) => Math.min(MAX_REPORT_BYTES, Math.max(RATIO_FLOOR_BYTES, compressed * MAX_RATIO));

function tooLarge(compressed: number): ReportRejected {
  const limit = limitFor(compressed);
  return new ReportRejected(
    limit === MAX_REPORT_BYTES
      ? `the report is larger than ${MAX_REPORT_BYTES / 1024 / 1024} MB decompressed`
      : `the report decompresses past ${MAX_RATIO} times its compressed size (${compressed} bytes): a compression bomb`,
  );
}

function capped(b: Buffer): Buffer {
  if (b.length > MAX_REPORT_BYTES) throw new ReportRejected(`the report is larger than ${MAX_REPORT_BYTES / 1024 / 1024} MB`);
  return b;
}

function unpack(packing: Packing, content: Buffer): Buffer {
  if (packing === 'plain') return capped(content);
  if (packing === 'gzip') return gunzip(content);
  return unzipOne(content);
}

function gunzip(content: Buffer): Buffer {
  try {
    // node:zlib stops at maxOutputLength with a RangeError instead of growing the buffer further.
    return gunzipSync(content, { maxOutputLength: limitFor(content.length) });
  } catch (err) {
    if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(content.length);
    throw new ReportRejected(`the gzip file could not be read (${(err as Error).message})`);
  }
}

/** The one file of a zip, inflated a slice at a time and stopped as soon as it passes the limit. */
function unzipOne(content: Buffer): Buffer {
  const limit = limitFor(content.length);
  const chunks: Uint8Array[] = [];
  let files = 0;
  let size = 0;
  let problem: ReportRejected | null = null;
  const unzip = new Unzip((file) => {
    if (++files > 1) {
      problem ??= new ReportRejected('the zip file holds more than one file');
      return;
    }
    file.ondata = (err, chunk) => {
      if (problem) return;
      if (err) {
        problem = new ReportRejected(`the zip file could not be read (${err.message})`);
        return;
      }
      size += chunk.length;
      if (size > limit) {
        problem = tooLarge(content.length);
        file.terminate();
        return;
      }
      chunks.push(chunk);
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    for (let at = 0; at < content.length && !problem; at += ZIP_SLICE) {
      unzip.push(content.subarray(at, at + ZIP_SLICE), at + ZIP_SLICE >= content.length);
    }
  } catch (err) {
    problem ??= new ReportRejected(`the zip file could not be read (${(err as Error).message})`);
  }
  if (problem) throw problem;
  if (files === 0) throw new ReportRejected('the zip file holds no file');
  return Buffer.concat(chunks);
}
