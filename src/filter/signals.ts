// One piece of evidence about whether a received message is spam, in the shape of the email record's
// `spam.signals` (DESIGN.md "spam verdict"): what was seen, in words an owner can read, and how far it leans.
// Produced at the door (blocklists, reverse DNS, HELO), by the content filter and by the workspace's own lists
// and history; combined into one verdict by the filter (combine.ts). `auth` (an SPF or DMARC failure) and `sender`
// (a sender the owner marked spam or not spam) name the rules that decide before any score.

export type SignalKind =
  | 'gtube'
  | 'content'
  | 'learning'
  | 'dnsbl'
  | 'uribl'
  | 'rdns'
  | 'helo'
  | 'reputation'
  | 'allow'
  | 'block'
  | 'rspamd'
  | 'auth'
  | 'sender';

export interface Signal {
  kind: SignalKind;
  detail: string;
  /**
   * How far it leans, as a spam probability: 0 is surely ham, 0.5 says nothing, 1 is surely spam (a content
   * clue's token probability; 1 for GTUBE). 0 for notes that only explain (the model still learning).
   */
  weight: number;
}
