// VERP return paths: mail leaves with MAIL FROM b-<email id>-<mac>@<bounce subdomain>, so a bounce names
// the email it is about, and the MAC (HMAC with the box secret) means only the box could have made it:
// forged bounces to guessed addresses are refused.
import { createHmac, timingSafeEqual } from 'node:crypto';

const mac = (secret: Buffer, emailId: string) => createHmac('sha256', secret).update(emailId).digest('hex').slice(0, 12);

export function verpAddress(secret: Buffer, emailId: string, returnPath: string): string {
  return `b-${emailId.toLowerCase()}-${mac(secret, emailId)}@${returnPath}`;
}

/** The em_ id a VERP address stands for, or null if it is not one of ours. */
export function parseVerp(secret: Buffer, address: string): string | null {
  const m = /^b-(em_[0-9a-z]{26})-([0-9a-f]{12})@/i.exec(address);
  if (!m) return null;
  const emailId = `em_${m[1].slice(3).toUpperCase()}`;
  const want = Buffer.from(mac(secret, emailId));
  const got = Buffer.from(m[2].toLowerCase());
  return timingSafeEqual(want, got) ? emailId : null;
}
