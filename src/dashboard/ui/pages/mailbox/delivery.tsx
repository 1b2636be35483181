// Where sent mail stands, where people look: a word on its row in the list (DeliveryWord) and, in the reading
// pane, a line per recipient saying what happened and what the remote server answered (Delivery). Both follow
// the live event stream: live.ts listens for DELIVERY_EVENTS (listenForDelivery) and the mailbox refreshes.
import { Badge } from '../../components/feedback.tsx';
import type { DeliverySummary, Email, RecipientDelivery, RecipientState } from './model.ts';

/** The events after which a sent message reads differently. */
export const DELIVERY_EVENTS = ['email.sent', 'email.delivered', 'email.delivery_delayed', 'email.bounced', 'email.blocked', 'email.failed', 'email.complained', 'email.canceled'];

// At most one refresh a second however many events come (an application's batch sends hundreds).
const REFRESH_MS = 1000;

/** Calls `refresh` after delivery events on `stream`, once for a burst. */
export function listenForDelivery(stream: EventSource, refresh: () => void): void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const soon = () => {
    timer ??= setTimeout(() => {
      timer = null;
      refresh();
    }, REFRESH_MS);
  };
  for (const type of DELIVERY_EVENTS) stream.addEventListener(type, soon);
}

type Tone = 'neutral' | 'good' | 'bad' | 'warn' | 'info';
const WORDS: Record<RecipientState, [string, Tone]> = {
  scheduled: ['Scheduled', 'info'],
  queued: ['Sending', 'neutral'],
  sending: ['Sending', 'neutral'],
  delivered: ['Delivered', 'good'],
  delayed: ['Delayed', 'warn'],
  bounced: ['Bounced', 'bad'],
  suppressed: ['Not sent', 'bad'],
  failed: ['Failed', 'bad'],
  complained: ['Spam complaint', 'bad'],
  canceled: ['Canceled', 'neutral'],
};

/** The row's word: the state that asks most for attention, with how many of the recipients it concerns. */
export function DeliveryWord({ summary }: { summary: DeliverySummary | null | undefined }) {
  if (!summary) return <span />;
  const [word, tone] = WORDS[summary.state];
  const total = Object.values(summary.counts).reduce((n, c) => n + (c ?? 0), 0);
  const some = summary.counts[summary.state] ?? 0;
  return (
    <span class="delivery-word" data-state={summary.state}>
      <Badge tone={tone}>{total > 1 && some < total ? `${word} (${some} of ${total})` : word}</Badge>
    </span>
  );
}

/** The reading pane's part: one line per recipient of a sent message. */
export function Delivery({ email }: { email: Email }) {
  if (email.direction !== 'out' || !email.recipients?.length) return null;
  return (
    <section class="delivery" aria-label="Delivery">
      <ul>
        {email.recipients.map((r) => (
          <li data-state={r.state} class={WORDS[r.state][1]}>
            <span class="who">{r.email}</span>
            <span class="what" title={r.detail.mx ? `Last answered by ${r.detail.mx}` : undefined}>
              {sentence(r)}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

const SUPPRESSED_BECAUSE: Record<string, string> = {
  hard_bounce: 'an earlier hard bounce',
  complaint: 'an earlier spam complaint',
  unsubscribe: 'the recipient unsubscribed',
  manual: 'added to the list by hand',
};

function sentence(r: RecipientDelivery): string {
  const said = r.detail.response ? `; the server said: ${r.detail.response}` : '';
  switch (r.state) {
    case 'delivered':
      return `Delivered at ${at(r.at)}`;
    case 'delayed':
      return `Delayed: next attempt at ${r.detail.nextAttemptAt ? at(r.detail.nextAttemptAt) : 'soon'}${said}`;
    case 'bounced':
      return `Bounced: ${r.detail.response ?? 'refused by the recipient’s server'}${r.detail.reason === 'hard_bounce' ? ' (the address is now suppressed)' : ''}`;
    case 'suppressed':
      return `Not sent: the address is suppressed (${SUPPRESSED_BECAUSE[r.detail.reason ?? ''] ?? 'on the suppression list'})`;
    case 'failed':
      return `Failed after ${r.detail.attempts} attempt${r.detail.attempts === 1 ? '' : 's'}${r.detail.response ? `: ${r.detail.response}` : ''}`;
    case 'complained':
      return `Complained (marked as spam) at ${at(r.at)}`;
    case 'scheduled':
      return `Scheduled for ${r.detail.nextAttemptAt ? at(r.detail.nextAttemptAt) : 'later'}`;
    case 'canceled':
      return 'Canceled before it was sent';
    case 'sending':
      return 'Sending now';
    default:
      return `Queued${r.detail.attempts ? ` (attempt ${r.detail.attempts + 1})` : ''}`;
  }
}

/** 10:42 today, else Nov 21, 10:42. */
function at(iso: string): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })}, ${time}`;
}
