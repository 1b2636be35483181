// One recipient's message made from the email's, with what personalise.ts made for that recipient; runs in a sign
// worker, apart from personalise.ts so the main thread never loads the composer. It must not change the text part
// (the email's own, or derived from the original HTML), so tracking never changes what the text says.
import { htmlToText, type ComposeInput } from '../mail/compose.ts';
import type { Personalisation } from './personalise.ts';
import { rewriteHtml } from '../feedback/tracking.ts';
import { withoutListUnsubscribe } from '../feedback/unsubscribe.ts';

export function personalCopy<T extends Pick<ComposeInput, 'headers' | 'html' | 'text'>>(input: T, p: Personalisation): T {
  const headers = p.headers ? { ...withoutListUnsubscribe(input.headers), ...p.headers } : input.headers;
  if (input.html === undefined || (!p.links && !p.pixel)) return { ...input, headers };
  return { ...input, headers, text: input.text ?? htmlToText(input.html), html: rewriteHtml(input.html, p) };
}
