// Runs in a sign worker (sign-worker.ts): one recipient's message made from the email's, with the headers and
// links personalise.ts made for that recipient. Kept apart from personalise.ts so the main thread never loads
// the composer. The text part stays the email's own (derived from the original HTML when it has none), so
// tracking never changes what the text says.
import { htmlToText, type ComposeInput } from '../mail/compose.ts';
import type { Personalisation } from './personalise.ts';
import { rewriteHtml } from '../feedback/tracking.ts';
import { withoutListUnsubscribe } from '../feedback/unsubscribe.ts';

export function personalCopy<T extends Pick<ComposeInput, 'headers' | 'html' | 'text'>>(input: T, p: Personalisation): T {
  const headers = p.headers ? { ...withoutListUnsubscribe(input.headers), ...p.headers } : input.headers;
  if (input.html === undefined || (!p.links && !p.pixel)) return { ...input, headers };
  return { ...input, headers, text: input.text ?? htmlToText(input.html), html: rewriteHtml(input.html, p) };
}
