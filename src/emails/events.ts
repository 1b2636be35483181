// Delivery events of an email ({id, emailId, type, recipient, createdAt, data}, DESIGN.md) and the email's
// status that follows from its recipients. Written in the same transaction as the change they describe.
// An event's id is not stored (storage near the message size; 31 bytes an event, 124 a tracked email
// to two recipients): it is made from the event's time and seq under the box's secret (db/ids.ts keyedId), the
// same whenever it is read. Events stored before carry their id in the `id` column, which is '' for the rest.
import type { Clock } from '../clock.ts';
import { iso } from '../clock.ts';
import { all, change, column, dialect, get, type Query, run, transactionMemo, value } from '../db/query.ts';
import { idTime, keyedId } from '../db/ids.ts';
import { readBoxSecret } from '../db/box-secret.ts';

export const EVENT_TYPES = [
  'sent', 'delivered', 'delivery_delayed', 'bounced', 'blocked', 'failed', 'opened', 'clicked', 'complained', 'unsubscribed',
  'received', 'forwarded', 'scheduled', 'canceled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** An event type as webhooks, their subscriptions and the live stream name it: `email.<type>`. */
export const webhookEventType = (type: EventType) => `email.${type}`;

export interface NewEvent {
  workspaceId: string;
  emailId: string;
  type: EventType;
  recipient: string | null;
  data?: Record<string, unknown>;
  /** Whether the email is counted as the workspace's own (emails.counted), when the caller knows: else it is read. */
  counted?: boolean;
}

interface EventRow {
  seq: number;
  /** '' for an event stored since ids are made from the seq (eventId). */
  id: string;
  email_id: string;
  type: EventType;
  recipient: string | null;
  data: string;
  created_at: number;
}

// The event types daily_stats counts, each its own column (fixed names, never a client's text).
const COUNTED: Partial<Record<EventType, string>> = {
  sent: 'sent',
  received: 'received',
  delivered: 'delivered',
  bounced: 'bounced',
  blocked: 'blocked',
  opened: 'opened',
  clicked: 'clicked',
  complained: 'complained',
};

const INSERT_EVENT = "INSERT INTO events (id, workspace_id, email_id, type, recipient, data, created_at) VALUES ('', ?, ?, ?, ?, ?, ?)";

/**
 * Adds the event, its webhook outbox rows, and counts it in its workspace's day (daily_stats), all in the caller's
 * transaction. The only writer of `events` (events.test.ts checks that), so every event gets its deliveries as
 * durably as itself. Its `seq` (0028), the live stream's order, is given under the write lock, so in commit order:
 * addEventSeq returns it.
 */
export function* addEvent(clock: Clock, e: NewEvent): Query<void> {
  yield* insertEvent(clock, e, false);
}

/** addEvent, returning the event's seq. */
export function* addEventSeq(clock: Clock, e: NewEvent): Query<number> {
  return (yield* insertEvent(clock, e, true))!;
}

/** The transaction memo's key for whether a workspace has an enabled webhook (insertEvent). */
const hookedKey = (workspaceId: string) => `events.hooked:${workspaceId}`;

/**
 * For a write that creates or enables one of the workspace's webhooks: the events after it in the same PostgreSQL
 * transaction look for its endpoints again (insertEvent remembers, per transaction, a workspace without any).
 */
export function* webhooksChanged(workspaceId: string): Query<void> {
  (yield* transactionMemo())?.delete(hookedKey(workspaceId));
}

/** The event's seq when `wantSeq`, or when it has webhook deliveries to add; else null. */
function* insertEvent(clock: Clock, e: NewEvent, wantSeq: boolean): Query<number | null> {
  const now = clock.now();
  const values = [e.workspaceId, e.emailId, e.type, e.recipient, JSON.stringify(e.data ?? {}), now];
  let seq: number | null;
  let hooked: boolean;
  if ((yield* dialect()) === 'postgres') {
    // A workspace found without webhooks under the write lock has none for the rest of the transaction (unless one
    // of its writes adds one: webhooksChanged): its next events are sent without waiting for an answer.
    const memo = yield* transactionMemo();
    if (!wantSeq && memo?.get(hookedKey(e.workspaceId)) === false) {
      yield* change(INSERT_EVENT, ...values);
      [seq, hooked] = [null, false];
    } else {
      // One round trip instead of three: on PostgreSQL each statement is one, and they are a write's cost.
      const added = (yield* get<{ seq: number; hooked: number }>(
        `${INSERT_EVENT} RETURNING seq, EXISTS (SELECT 1 FROM webhooks WHERE workspace_id = ? AND enabled = 1) AS hooked`,
        ...values,
        e.workspaceId,
      ))!;
      [seq, hooked] = [added.seq, added.hooked === 1];
      memo?.set(hookedKey(e.workspaceId), hooked);
    }
  } else {
    yield* run(INSERT_EVENT, ...values);
    // Not INSERT ... RETURNING: on SQLite that makes the insert open a statement journal, and FTS5 then flushes
    // the group commit's pending full-text rows as a segment per event (see addOutbox), as the trigger did.
    seq = Number(yield* value<number>('SELECT last_insert_rowid()'));
    hooked = (yield* get('SELECT 1 FROM webhooks WHERE workspace_id = ? AND enabled = 1 LIMIT 1', e.workspaceId)) !== undefined;
  }
  if (hooked) yield* addOutbox(e, now, seq!);
  const column = COUNTED[e.type];
  if (column === 'received' || (column && e.counted)) {
    // A count added as a value (excluded.x): on PostgreSQL a group commit's counts of a day then add up in one statement.
    yield* change(
      `INSERT INTO daily_stats (workspace_id, day, ${column}) VALUES (?, ?, ?) ON CONFLICT (workspace_id, day) DO UPDATE SET ${column} = daily_stats.${column} + excluded.${column}`,
      e.workspaceId,
      utcDay(now),
      1,
    );
  } else if (column && e.counted === undefined) {
    // Test sends and the box's own notices are not the workspace's sending (0033): one statement still, its
    // look-up of the email by its key costing about what a second statement's call would.
    yield* change(
      `INSERT INTO daily_stats (workspace_id, day, ${column}) SELECT ?, ?, 1 WHERE NOT EXISTS (SELECT 1 FROM emails WHERE id = ? AND counted = 0)
       ON CONFLICT (workspace_id, day) DO UPDATE SET ${column} = daily_stats.${column} + 1`,
      e.workspaceId,
      utcDay(now),
      e.emailId,
    );
  }
  return seq;
}

/**
 * What the trigger of 0019_webhooks.sql did until 0024 dropped it: one `webhook_deliveries` row per enabled
 * endpoint of the workspace subscribed to its type and matching its inbox and domain filters. (Its other row,
 * in `event_feed`, went with 0028: the event's own seq is the stream's order.) A trigger on `events` made every
 * insert into it open a statement journal, and FTS5 flush the group commit's pending full-text rows, one
 * segment per send (see search-index.ts): 20-40 µs of the writer per API send. An INSERT ... SELECT
 * does the same, so the endpoints are read first and a row is inserted for each. The outbox query runs only for
 * a workspace with an enabled endpoint, found by its index (webhooks_workspace).
 */
function* addOutbox(e: NewEvent, now: number, seq: number): Query<void> {
  const type = webhookEventType(e.type);
  const endpoints = yield* column<string>(
    `SELECT w.id FROM webhooks w
       WHERE w.workspace_id = @workspaceId AND w.enabled = 1
         AND EXISTS (SELECT 1 FROM json_each(w.events_json) j WHERE j.value IN ('*', @type))
         AND (w.inbox_id IS NULL OR w.inbox_id = (SELECT m.inbox_id FROM emails m WHERE m.id = @emailId)
              OR EXISTS (SELECT 1 FROM emails m JOIN inboxes i ON i.id = w.inbox_id
                         WHERE m.id = @emailId AND m.direction = 'out' AND lower(m.from_address) = lower(i.address)))
         AND (w.domain_id IS NULL OR w.domain_id = (SELECT m.domain_id FROM emails m WHERE m.id = @emailId))`,
    { workspaceId: e.workspaceId, emailId: e.emailId, type },
  );
  if (!endpoints.length) return;
  const eventId = idOf(yield* readBoxSecret(), { id: '', created_at: now, seq });
  for (const webhookId of endpoints) {
    yield* change(
      'INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, event_id, email_id, type, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      `whmsg_${eventId.slice(4)}_${webhookId.slice(3)}`, webhookId, e.workspaceId, eventId, e.emailId, type, now, now, now,
    );
  }
}

/** YYYY-MM-DD of a time in UTC: the day analytics and reputation count it in. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The id of an event: the one stored, or for one stored without, its time and 80 bits keyed on its seq. */
const idOf = (secret: Buffer, r: Pick<EventRow, 'id' | 'created_at' | 'seq'>) => r.id || keyedId('evt', r.created_at, secret, r.seq);

const presentEvent = (secret: Buffer, r: EventRow) => ({
  id: idOf(secret, r),
  emailId: r.email_id,
  type: r.type,
  recipient: r.recipient,
  createdAt: iso(r.created_at),
  data: JSON.parse(r.data) as Record<string, unknown>,
});
export type PresentedEvent = ReturnType<typeof presentEvent>;

const EVENT_COLUMNS = 'seq, id, workspace_id, email_id, type, recipient, data, created_at';
type StoredEvent = EventRow & { workspace_id: string };

/** The secret the rows' ids are made with, read only when one of them has no stored id. */
function* secretFor(rows: readonly EventRow[]): Query<Buffer> {
  return rows.some((r) => !r.id) ? yield* readBoxSecret() : Buffer.alloc(0);
}

/**
 * An email's events in the order they were committed; with `page`, `limit` of them from `offset` (events_email
 * holds (email_id, seq), so a page reads only its own rows and those it skips).
 */
export function* listEvents(workspaceId: string, emailId: string, page?: { limit: number; offset: number }): Query<PresentedEvent[]> {
  const rows = page
    ? yield* all<StoredEvent>(`SELECT ${EVENT_COLUMNS} FROM events WHERE workspace_id = ? AND email_id = ? ORDER BY seq LIMIT ? OFFSET ?`, workspaceId, emailId, page.limit, page.offset)
    : yield* all<StoredEvent>(`SELECT ${EVENT_COLUMNS} FROM events WHERE workspace_id = ? AND email_id = ? ORDER BY seq`, workspaceId, emailId);
  const secret = yield* secretFor(rows);
  return rows.map((r) => presentEvent(secret, r));
}

/**
 * The newest `opened` or `clicked` event of one recipient of an email made since `since` (for a click, of the
 * link to `url`): the event a repeated visit is counted on (feedback/visits.ts). Its seq and time, or null.
 */
export function* recentVisit(v: { emailId: string; type: 'opened' | 'clicked'; recipient: string; url: string | null; since: number }): Query<{ seq: number; createdAt: number } | null> {
  const row = yield* get<{ seq: number; created_at: number }>(
    `SELECT seq, created_at FROM events WHERE email_id = @emailId AND type = @type AND recipient = @recipient AND created_at >= @since
         AND (CAST(@url AS TEXT) IS NULL OR json_extract(data, '$.url') = @url) ORDER BY seq DESC LIMIT 1`,
    v,
  );
  return row ? { seq: row.seq, createdAt: row.created_at } : null;
}

/**
 * Adds `n` repeated visits, the last at `lastAt`, to an `opened` or `clicked` event: its data's `repeats` and
 * `lastRepeatAt`. Nothing when the event is gone (with its email). The only change to a stored event.
 */
export function* addRepeats(seq: number, n: number, lastAt: number): Query<void> {
  yield* change(
    // One path a json_set, and each value of its type, as PostgreSQL's json_set takes them (db/postgres/0043_schema.sql).
    `UPDATE events SET data = json_set(json_set(data, '$.repeats', coalesce(CAST(json_extract(data, '$.repeats') AS INTEGER), 0) + CAST(? AS INTEGER)), '$.lastRepeatAt', CAST(? AS TEXT))
     WHERE seq = ? AND type IN ('opened', 'clicked')`,
    n,
    iso(lastAt),
    seq,
  );
}
/** An event as the API shows it, with its workspace and its place in commit order. */
export interface EventOfWorkspace {
  seq: number;
  workspaceId: string;
  event: PresentedEvent;
}
const withWorkspace = (secret: Buffer, row: StoredEvent): EventOfWorkspace => ({ seq: row.seq, workspaceId: row.workspace_id, event: presentEvent(secret, row) });

/** The rows with their workspaces, as the stream and the webhooks show them. */
function* ofWorkspaces(rows: StoredEvent[]): Query<EventOfWorkspace[]> {
  const secret = yield* secretFor(rows);
  return rows.map((r) => withWorkspace(secret, r));
}

/**
 * One event of an email as the API shows it, with its workspace; undefined once its email is gone. Found among
 * the email's events of the millisecond the id names (or by the id stored, as events were before).
 */
export function* eventOf(emailId: string, id: string): Query<EventOfWorkspace | undefined> {
  const time = idTime(id);
  const rows = yield* all<StoredEvent>(`SELECT ${EVENT_COLUMNS} FROM events WHERE email_id = ? AND (id = ? OR (id = '' AND created_at = ?))`, emailId, id, Number.isNaN(time) ? -1 : time);
  const secret = yield* secretFor(rows);
  const row = rows.find((r) => idOf(secret, r) === id);
  return row && withWorkspace(secret, row);
}

const IN_SLICE = 'seq > ? AND seq <= ? AND workspace_id = ? AND created_at >= ? ORDER BY seq';

/**
 * A workspace's events committed after `after` and up to `upTo` (their seq), made since `since`, in commit order.
 * It walks that slice of the sequence (the rowid), never events_workspace: a slice reads as many rows as it spans.
 */
export function* eventsInOrder(workspaceId: string, after: number, upTo: number, since: number): Query<EventOfWorkspace[]> {
  return yield* ofWorkspaces(
    yield* all<StoredEvent>(
      {
        sqlite: `SELECT ${EVENT_COLUMNS} FROM events NOT INDEXED WHERE ${IN_SLICE}`,
        // PostgreSQL's planner walks the primary key's range by itself; it has no NOT INDEXED.
        postgres: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${IN_SLICE}`,
      },
      after, upTo, workspaceId, since,
    ),
  );
}

/** Every workspace's events committed after `after`, at most `limit`, in commit order: what the live stream polls. */
export function* eventsAfter(after: number, limit: number): Query<EventOfWorkspace[]> {
  return yield* ofWorkspaces(yield* all<StoredEvent>(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit));
}

/** The seq of the newest event committed (0 before the first). */
export function* newestSeq(): Query<number> {
  return Number(yield* value('SELECT coalesce(max(seq), 0) FROM events'));
}

/**
 * The seq just before a workspace's first event made since `since`: where catching up on that window starts.
 * (Commit order and creation time can differ by a transaction's wait at the window's edge.)
 */
export function* seqBefore(workspaceId: string, since: number): Query<number | null> {
  const first = yield* value<number>('SELECT seq FROM events WHERE workspace_id = ? AND created_at >= ? ORDER BY created_at LIMIT 1', workspaceId, since);
  return first === undefined ? null : first - 1;
}

/**
 * DESIGN.md's email status from its recipients: `sent` while queued, `delivery_delayed` while any recipient
 * waits after a temporary failure, and once all are final: `blocked` if every one was suppressed,
 * `delivered` if any arrived, else `bounced`, else `failed` (gave up).
 */
export function* refreshEmailStatus(emailId: string): Query<void> {
  // One statement, answered by nobody: on PostgreSQL it goes on with the next (query.ts change). Only when the
  // status changes: most outcomes leave it as it was, and a write is not free.
  yield* change(
    `UPDATE emails SET status = s.status FROM (
       SELECT CASE
         WHEN count(*) FILTER (WHERE state = 'deferred') > 0 THEN 'delivery_delayed'
         WHEN count(*) FILTER (WHERE state IN ('queued', 'sending')) > 0 THEN 'sent'
         WHEN count(*) FILTER (WHERE state != 'blocked') = 0 THEN 'blocked'
         WHEN count(*) FILTER (WHERE state = 'delivered') > 0 THEN 'delivered'
         WHEN count(*) FILTER (WHERE state = 'bounced') > 0 THEN 'bounced'
         ELSE 'failed' END AS status
       FROM deliveries WHERE email_id = ?) s
     WHERE emails.id = ? AND emails.status != s.status`,
    emailId,
    emailId,
  );
}
