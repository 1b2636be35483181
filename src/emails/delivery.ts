// Where each recipient of a sent email stands (the email record's `recipients` and `delivery`, DESIGN.md "email
// record"): read from the queue rows (deliveries: state, attempts, next attempt, the last answer, a complaint)
// and, for a suppressed or bounced recipient, its event's data. One query per email read (or thread), one per
// list page for the summaries, never one per row. Read-only SQL; the queue and feedback/ write what it reads.
import { all, type Query } from '../db/query.ts';
import { iso } from '../clock.ts';

export const RECIPIENT_STATES = ['scheduled', 'queued', 'sending', 'delivered', 'delayed', 'bounced', 'suppressed', 'failed', 'complained', 'canceled'] as const;
export type RecipientState = (typeof RECIPIENT_STATES)[number];

export interface RecipientDelivery {
  email: string;
  state: RecipientState;
  /** When the recipient reached this state (delayed: the last attempt; scheduled: when it was scheduled). */
  at: string;
  detail: {
    /** The last SMTP reply code, when there was one. */
    code: number | null;
    /** The last answer: the remote server's reply as sent, a DSN's diagnostic, or the box's own reason. */
    response: string | null;
    /** Delayed: when the queue tries again; scheduled: when the send goes. */
    nextAttemptAt: string | null;
    attempts: number;
    /** The MX host (or relay) that answered last. */
    mx: string | null;
    /**
     * suppressed: why the address is on the suppression list (hard_bounce, complaint, unsubscribe, manual);
     * bounced: `hard_bounce` when this bounce put it there; complained: the report's feedback type (abuse...).
     */
    reason: string | null;
  };
}

export interface DeliverySummary {
  /** The state that asks most for attention (WORST_FIRST): what the mailbox's list shows. */
  state: RecipientState;
  /** How many recipients are in each state. */
  counts: Partial<Record<RecipientState, number>>;
}

// A complaint or a bounce is worse news than a delay, a delay than mail still on its way, and delivered is
// the good end: the list shows the first state any recipient is in.
const WORST_FIRST: RecipientState[] = ['complained', 'bounced', 'failed', 'suppressed', 'delayed', 'sending', 'queued', 'scheduled', 'canceled', 'delivered'];

const FROM_QUEUE: Record<string, RecipientState> = {
  queued: 'queued',
  sending: 'sending',
  deferred: 'delayed',
  delivered: 'delivered',
  bounced: 'bounced',
  failed: 'failed',
  blocked: 'suppressed',
};

interface Row {
  email_id: string;
  recipient: string;
  state: string;
  attempts: number;
  next_attempt_at: number | null;
  last_code: number | null;
  last_response: string | null;
  last_mx: string | null;
  at: number;
  complained_at: number | null;
  /** The data of the recipient's blocked, bounced or complained event, for its reason. */
  note: string | null;
}

const ids = (emailIds: readonly string[]) => JSON.stringify(emailIds);

/**
 * The recipients of each sent email named, in the order they were queued: one query for all of them. A send
 * waiting for its time has its scheduled_sends row; a canceled one only its `canceled` events.
 */
export function* recipientsOf(emailIds: readonly string[]): Query<Map<string, RecipientDelivery[]>> {
  const out = new Map<string, RecipientDelivery[]>();
  if (!emailIds.length) return out;
  const rows = yield* all<Row>(
    `SELECT d.email_id, d.recipient, d.state, d.attempts, d.next_attempt_at, d.last_code, d.last_response, d.last_mx, d.updated_at AS at, d.complained_at,
         CASE WHEN d.complained_at IS NOT NULL OR d.state IN ('blocked', 'bounced') THEN
           (SELECT v.data FROM events v WHERE v.email_id = d.email_id AND v.recipient = d.recipient
              AND v.type = CASE WHEN d.complained_at IS NOT NULL THEN 'complained' ELSE d.state END ORDER BY v.seq DESC LIMIT 1)
         END AS note, d.id AS ord
       FROM deliveries d WHERE d.email_id IN (SELECT value FROM json_each(@ids))
       UNION ALL
       SELECT s.email_id, j.value, 'scheduled', 0, s.scheduled_at, NULL, NULL, NULL, s.created_at, NULL, NULL, CAST(j.key AS INTEGER)
       FROM scheduled_sends s, json_each(s.recipients) j WHERE s.email_id IN (SELECT value FROM json_each(@ids))
       UNION ALL
       SELECT v.email_id, v.recipient, 'canceled', 0, NULL, NULL, NULL, NULL, v.created_at, NULL, NULL, v.seq
       FROM emails e JOIN events v ON v.email_id = e.id
       WHERE e.id IN (SELECT value FROM json_each(@ids)) AND e.status = 'canceled' AND v.type = 'canceled'
       ORDER BY 1, ord`,
    { ids: ids(emailIds) },
  );
  for (const r of rows) {
    const list = out.get(r.email_id) ?? [];
    list.push(present(r));
    out.set(r.email_id, list);
  }
  return out;
}

function present(r: Row): RecipientDelivery {
  const complained = r.complained_at !== null;
  const state: RecipientState = complained ? 'complained' : r.state === 'scheduled' || r.state === 'canceled' ? r.state : FROM_QUEUE[r.state];
  const note = r.note ? (JSON.parse(r.note) as Record<string, unknown>) : {};
  const reason = complained ? note.feedbackType : state === 'suppressed' ? note.reason : state === 'bounced' && note.hardBounce ? 'hard_bounce' : null;
  return {
    email: r.recipient,
    state,
    at: iso(complained ? r.complained_at! : r.at),
    detail: {
      code: r.last_code,
      response: r.last_response,
      nextAttemptAt: (state === 'delayed' || state === 'scheduled') && r.next_attempt_at !== null ? iso(r.next_attempt_at) : null,
      attempts: r.attempts,
      mx: r.last_mx,
      reason: typeof reason === 'string' ? reason : null,
    },
  };
}

/** The summary of a list of recipients' states. */
export function summarize(recipients: ReadonlyArray<Pick<RecipientDelivery, 'state'>>): DeliverySummary | null {
  const counts: Partial<Record<RecipientState, number>> = {};
  for (const r of recipients) counts[r.state] = (counts[r.state] ?? 0) + 1;
  const state = WORST_FIRST.find((s) => counts[s]);
  return state ? { state, counts } : null;
}

/** The summary of each sent email named (a list page): one grouped query for the page. */
export function* summariesOf(emailIds: readonly string[]): Query<Map<string, DeliverySummary>> {
  const out = new Map<string, DeliverySummary>();
  if (!emailIds.length) return out;
  const rows = yield* all<{ email_id: string; state: string; n: number }>(
    `SELECT d.email_id, CASE WHEN d.complained_at IS NOT NULL THEN 'complained' ELSE d.state END AS state, count(*) AS n
       FROM deliveries d WHERE d.email_id IN (SELECT value FROM json_each(@ids)) GROUP BY 1, 2
       UNION ALL
       SELECT s.email_id, 'scheduled', json_array_length(s.recipients) FROM scheduled_sends s WHERE s.email_id IN (SELECT value FROM json_each(@ids))
       UNION ALL
       SELECT e.id, 'canceled', count(*) FROM emails e JOIN events v ON v.email_id = e.id
       WHERE e.id IN (SELECT value FROM json_each(@ids)) AND e.status = 'canceled' AND v.type = 'canceled' GROUP BY 1`,
    { ids: ids(emailIds) },
  );
  const counted = new Map<string, Partial<Record<RecipientState, number>>>();
  for (const r of rows) {
    const state = r.state === 'complained' || r.state === 'scheduled' || r.state === 'canceled' ? r.state : FROM_QUEUE[r.state];
    const counts = counted.get(r.email_id) ?? {};
    counts[state] = (counts[state] ?? 0) + r.n;
    counted.set(r.email_id, counts);
  }
  for (const [id, counts] of counted) out.set(id, { state: WORST_FIRST.find((s) => counts[s])!, counts });
  return out;
}
