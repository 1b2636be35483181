// DKIM-signs a composed message with mailauth (RFC 6376): one rsa-sha256, relaxed/relaxed signature whose
// h= names every identity and list header the message has, and, when the key has an ed25519 half (dkim_ed25519),
// a second ed25519-sha256 signature (RFC 8463) with the same h=. It never rewrites the message: the signature
// header is prepended to exactly the bytes given, which must already be the bytes that go on the wire.
// The signer alone: the package root also loads SPF, BIMI and ARC, which would add ~150 ms to each worker's start.
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { assertWireSafe } from './compose.ts';

export interface DkimKey {
  domain: string;
  selector: string;
  /** PKCS#8 PEM. */
  privateKey: string;
  /** A second key (RFC 8463) whose ed25519-sha256 signature goes beside the RSA one: only once DNS serves its record. */
  ed25519?: { selector: string; /** PKCS#8 PEM. */ privateKey: string };
}

export class SignError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SignError';
  }
}

/**
 * The fields h= may name; mailauth lists only those the message has. Named explicitly because mailauth's
 * default leaves out List-Unsubscribe-Post, which RFC 8058 3.1 requires the signature to cover.
 */
export const SIGNED_HEADERS: string[] = [
  'From', 'To', 'Cc', 'Subject', 'Date', 'Message-ID', 'Reply-To', 'In-Reply-To', 'References',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding',
  'List-Unsubscribe', 'List-Unsubscribe-Post', 'List-Id', 'Feedback-ID',
];

// What mailauth 4.13's DkimSigner actually reads. Its index.d.ts describes another shape: it types headerList
// as string[] (the code ignores anything but a colon-separated string and silently falls back to its default
// list) and puts the key at the top level (the code only reads signatureData). It also reports failures
// (a bad key) in `errors` instead of throwing.
interface SignOptions {
  canonicalization: string;
  algorithm: string;
  headerList: string;
  signTime: Date;
  signatureData: Array<{ signingDomain: string; selector: string; privateKey: string; algorithm: string; canonicalization: string }>;
}
interface SignResult {
  signatures: string;
  errors: Array<{ err?: unknown }>;
}
const signDkim = dkimSign as unknown as (input: Buffer, options: SignOptions) => Promise<SignResult>;

const HEADER_LIST = SIGNED_HEADERS.join(':');

export async function sign(raw: Buffer, key: DkimKey): Promise<Buffer> {
  // A relay that repairs line endings or long lines after signing breaks the body hash (RFC 6376 5.3).
  assertWireSafe(raw);
  const where = [key.selector, ...(key.ed25519 ? [key.ed25519.selector] : [])].map((s) => `${s}._domainkey.${key.domain}`).join(' and ');
  const algorithm = 'rsa-sha256'; // RFC 8301 3.1: sha1 is no longer acceptable
  const canonicalization = 'relaxed/relaxed'; // survives the header refolding relays do
  const signatureData = [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKey, algorithm, canonicalization }];
  // RFC 8463 3: ed25519-sha256 signs the SHA-256 of the canonicalised header (mailauth does so for ed25519 keys).
  if (key.ed25519) signatureData.push({ signingDomain: key.domain, selector: key.ed25519.selector, privateKey: key.ed25519.privateKey, algorithm: 'ed25519-sha256', canonicalization });
  let result: SignResult;
  try {
    result = await signDkim(raw, {
      algorithm,
      canonicalization,
      headerList: HEADER_LIST,
      // t= lets receivers judge the signature's age; no x=, so a message still queued days later verifies.
      signTime: new Date(),
      // No maxBodyLength: an l= tag would let anyone append unsigned content (RFC 6376 8.2).
      signatureData,
    });
  } catch (err) {
    throw new SignError(`DKIM signing with ${where} failed: ${describe(err)}`);
  }
  const failure = result.errors[0];
  if (failure) throw new SignError(`DKIM signing with ${where} failed: ${describe(failure.err)}`);
  const made = (result.signatures.match(/^DKIM-Signature:/gim) ?? []).length;
  if (made !== signatureData.length) throw new SignError(`DKIM signing with ${where} produced ${made ? `${made} of ${signatureData.length} signatures` : 'no signature'}`);
  return Buffer.concat([Buffer.from(result.signatures, 'latin1'), raw]);
}

const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));
