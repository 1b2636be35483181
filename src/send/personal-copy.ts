// One recipient's message made from the email's, with what personalise.ts made for that recipient; runs in a sign
// worker, apart from personalise.ts so the main thread never loads the composer. Tracking must not change the text
// part (the email's own, or derived from the original HTML); only {{unsubscribe_url}} becomes the recipient's link.
import { htmlToText, type ComposeInput } from '../mail/compose.ts';
import type { Personalisation } from './personalise.ts';
import { rewriteHtml } from '../feedback/tracking.ts';
import { withoutListUnsubscribe } from '../feedback/unsubscribe.ts';
import { UNSUBSCRIBE_PLACEHOLDER } from '../templates/content.ts';

export function personalCopy<T extends Pick<ComposeInput, 'headers' | 'html' | 'text'>>(input: T, p: Personalisation): T {
  const headers = p.headers ? { ...withoutListUnsubscribe(input.headers), ...p.headers } : input.headers;
  let { html, text } = input;
  if (html !== undefined && (p.links || p.pixel)) {
    text ??= htmlToText(html);
    html = rewriteHtml(html, p);
  }
  const url = p.unsubscribeUrl;
  if (url === null) return { ...input, headers, html, text };
  // The body's own unsubscribe link (templates/content.ts): the recipient's one-click URL.
  return { ...input, headers, html: html?.replaceAll(UNSUBSCRIBE_PLACEHOLDER, url.replaceAll('&', '&amp;')), text: text?.replaceAll(UNSUBSCRIBE_PLACEHOLDER, url) };
}
