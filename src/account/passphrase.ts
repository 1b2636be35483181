// The box's one passphrase rule, for every way a user's passphrase is set: the first start (setup), `mailwright
// user add`, `mailwright user passwd` and the change from the dashboard (POST /auth/password). It judges, it
// never hashes; callers pass a passphrase that is too weak back with the message as it is.

// The most common passwords of the breach lists that pass a length rule, and words people reach for here.
const COMMON = ['password', 'passphrase', 'qwerty', '123456', 'letmein', 'welcome', 'iloveyou', 'admin', 'mailwright', 'changeme', 'abc123'];

/** Why a passphrase is too weak for a user of the box, or null: 12+ characters, not a repeat, a sequence or a common word. */
export function passphraseProblem(passphrase: string, email: string): string | null {
  const chars = [...passphrase];
  if (chars.length < 12) return 'must be at least 12 characters (a few unrelated words make a good one)';
  if (chars.length > 1024) return 'must be at most 1,024 characters';
  if (new Set(chars).size < 6) return 'repeats too few different characters';
  const lower = passphrase.toLowerCase();
  if (COMMON.some((w) => lower.replace(/[^a-z0-9]/g, '').startsWith(w) && lower.length < w.length + 6)) return 'is a common password with little added';
  if ('abcdefghijklmnopqrstuvwxyz0123456789'.includes(lower) || '0123456789876543210'.includes(lower)) return 'is a simple sequence';
  const local = email.split('@')[0]?.toLowerCase() ?? '';
  if (local.length >= 4 && lower.includes(local)) return 'must not contain your e-mail address';
  return null;
}
