// What a delivery notice says (feedback/notices.ts): its subject and text for a bounce, a delivery the queue gave
// up on, or a spam complaint, written for the person who sent the message: which recipient, what the remote
// server answered, and what to do next. Pure: words only.

export type NoticeKind = 'bounced' | 'failed' | 'complained';

export interface NoticeCause {
  workspaceId: string;
  emailId: string;
  recipient: string;
  kind: NoticeKind;
  /** The remote server's answer as sent, a DSN's diagnostic, or the box's own reason; null when there was none. */
  response: string | null;
  /** bounced: the address is bad, and the bounce put it on the suppression list. */
  hardBounce?: boolean;
  /** bounced: the remote server accepted the message first and reported the failure later (a DSN). */
  later?: boolean;
  /** failed: why the queue stopped (gave up after its lifetime, or a failure of the box). */
  reason?: string | null;
  /** complained: the report's feedback type (abuse, fraud ...) and the provider's agent, when it said. */
  feedbackType?: string | null;
  userAgent?: string | null;
}

export interface Original {
  subject: string;
  sentAt: number;
}

const FAILURE = 'Delivery Status Notification (Failure)';

export function noticeWords(c: NoticeCause, original: Original): { subject: string; text: string; why: string } {
  const about = ['', 'Your message', `  Subject: ${original.subject || '(no subject)'}`, `  Sent: ${new Date(original.sentAt).toUTCString()}`];
  const answer = c.response ? ['', 'The response from the remote server was:', '', indent(c.response)] : [];
  const suppressed = `The box has put ${c.recipient} on the suppression list and will not send to it again until you remove it (Suppressions, or DELETE /api/v1/suppressions/${c.recipient}).`;

  if (c.kind === 'complained') {
    const from = [c.feedbackType && `a report of type "${c.feedbackType}"`, c.userAgent && `from ${c.userAgent}`].filter(Boolean).join(' ');
    return {
      subject: 'Your message was marked as spam',
      why: 'a recipient marked your message as spam',
      text: lines(
        'Marked as spam',
        '',
        `${c.recipient} reported your message as spam to their mail provider${from ? ` (${from})` : ''}.`,
        '',
        `What to do: ${suppressed} Complaints lower your domain's standing with mail providers: send only mail people asked for, and make unsubscribing easy. If the report was a mistake, the recipient can write to you and you can take the address off the list.`,
        ...about,
      ),
    };
  }
  if (c.kind === 'failed') {
    return {
      subject: FAILURE,
      why: 'your message did not reach someone',
      text: lines(
        'Message not delivered',
        '',
        `The box could not deliver your message to ${c.recipient}${c.reason ? `: ${c.reason}` : ''}.`,
        ...(c.response ? ['', 'The last answer was:', '', indent(c.response)] : []),
        '',
        `What to do: the recipient's mail server could not be reached or kept refusing the message. Check the address and its domain; if other mail is stuck as well, run "mailwright doctor" on the box. Then send the message again.`,
        ...about,
      ),
    };
  }
  if (c.hardBounce) {
    return {
      subject: FAILURE,
      why: 'your message did not reach someone',
      text: lines(
        'Address not found',
        '',
        `Your message wasn't delivered to ${c.recipient} because the address couldn't be found, or is unable to receive mail.`,
        ...answer,
        '',
        `What to do: check the address for typing mistakes and send the message again. ${suppressed}`,
        ...about,
      ),
    };
  }
  return {
    subject: FAILURE,
    why: 'your message did not reach someone',
    text: lines(
      'Message not delivered',
      '',
      c.later
        ? `The mail server of ${c.recipient} accepted your message, then reported that it could not deliver it.`
        : `Your message to ${c.recipient} was refused by the recipient's mail server.`,
      ...answer,
      '',
      'What to do: the answer usually says why. A refusal for policy or spam (codes 5.7.x) often means the receiving side does not trust the sending domain yet: check its DNS records (SPF, DKIM, DMARC) on the Domains page, then try again later. A full mailbox (5.2.2) may take mail again later.',
      ...about,
    ),
  };
}

const lines = (...parts: string[]) => `${parts.join('\n')}\n`;
const indent = (s: string) =>
  s
    .split(/\r?\n/)
    .map((l) => `  ${l.trim()}`)
    .join('\n');
