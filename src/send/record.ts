// Recording an attempt: each claimed recipient's outcome becomes its deliveries row (delivered, bounced, failed,
// or deferred with the next attempt from policy.ts), its event and its email's status, and a hard bounce
// suppresses the address (feedback/bounces.ts), all in one group commit; a bounce or a failure of mail sent from
// the dashboard also puts a notice in the sender's mailbox (feedback/notices.ts). It must not deliver or decide outcomes.
import type { App } from '../context.ts';
import { change } from '../db/query.ts';
import { addEvent, refreshEmailStatus } from '../emails/events.ts';
import { suppressIfHard } from '../feedback/bounces.ts';
import { noticeSender } from '../feedback/notices.ts';
import type { Claimed } from './claims.ts';
import type { RecipientOutcome } from './outcome.ts';
import { expired, retryDelay, type RetryPolicy } from './policy.ts';
import type { DeliveryAttempt } from '../metrics/metrics.ts';

/** The outcome of a recipient that never left the box. */
export type LocalFailure = Omit<RecipientOutcome, 'result'> & { result: 'failed' | 'deferred' };

/** A recipient that was not sent: a permanent local failure ends it ('failed'); anything else waits like a deferral. */
export function localFailure(row: Claimed, permanent: boolean, reason: string): LocalFailure {
  return { messageId: row.email_id, recipient: row.recipient, result: permanent ? 'failed' : 'deferred', code: null, enhanced: null, response: reason, mx: null, tls: false, tlsVerified: false, tlsError: null, tlsPolicy: 'none' };
}

/**
 * Records one outcome per claimed row (matched by email and recipient); a row without one is deferred.
 */
export async function recordOutcomes(app: App, policy: RetryPolicy, rows: Claimed[], outcomes: Array<RecipientOutcome | LocalFailure>): Promise<void> {
  const { clock } = app;
  // Returned, not gathered outside: the store may run the query again (another job of its commit failed).
  const attempted = await app.store.write(function* () {
    const attempted: Array<Record<string, unknown>> = [];
    const now = clock.now();
    const touched = new Set<string>();
    const byRecipient = new Map(outcomes.map((o) => [`${o.messageId}\n${o.recipient}`, o]));
    for (const row of rows) {
      const o = byRecipient.get(`${row.email_id}\n${row.recipient}`) ?? localFailure(row, false, 'no outcome was reported for this recipient');
      const attempts = row.attempts + 1;
      const data = { code: o.code, enhancedCode: o.enhanced, response: o.response, mx: o.mx, tls: o.tls, tlsVerified: o.tlsVerified, ...(o.tlsError ? { tlsError: o.tlsError } : {}), tlsPolicy: o.tlsPolicy, attempt: attempts };
      const event = (type: 'delivered' | 'bounced' | 'delivery_delayed' | 'failed', extra: Record<string, unknown> = {}) =>
        // Whether it counts is known from the claim: the count is then a plain upsert, merged in the group commit.
        addEvent(clock, { workspaceId: row.workspace_id, emailId: row.email_id, type, recipient: row.recipient, data: { ...data, ...extra }, counted: row.counted !== 0 });
      const finish = (state: string) => {
        attempted.push(attemptLine(row, o, state, attempts));
        return change('UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = NULL, claimed_at = NULL, claimed_by = NULL, last_code = ?, last_response = ?, last_mx = ?, updated_at = ? WHERE id = ?', state, attempts, o.code, o.response, o.mx, now, row.id);
      };
      const notice = { workspaceId: row.workspace_id, emailId: row.email_id, recipient: row.recipient };
      if (o.result === 'delivered') {
        yield* finish('delivered');
        yield* event('delivered');
      } else if (o.result === 'bounced') {
        yield* finish('bounced');
        // A refusal saying the address is bad suppresses it for the workspace, in this same commit.
        const hardBounce = yield* suppressIfHard(clock, { ...notice, code: o.code, enhanced: o.enhanced, response: o.response });
        yield* event('bounced', { hardBounce });
        yield* noticeSender(app, { ...notice, kind: 'bounced', response: o.response, hardBounce });
      } else if (o.result === 'failed') {
        yield* finish('failed');
        yield* event('failed', { reason: o.response });
        yield* noticeSender(app, { ...notice, kind: 'failed', response: null, reason: o.response });
      } else if (expired(policy, row.created_at, now)) {
        // RFC 5321 4.5.4.1: give up after the configured lifetime (4-5 days by default).
        yield* finish('failed');
        const reason = `gave up after ${attempts} attempts over ${Math.round((now - row.created_at) / 3_600_000)} h`;
        yield* event('failed', { reason });
        yield* noticeSender(app, { ...notice, kind: 'failed', response: o.response, reason });
      } else {
        attempted.push(attemptLine(row, o, 'deferred', attempts));
        yield* change(
          "UPDATE deliveries SET state = 'deferred', attempts = ?, next_attempt_at = ?, claimed_at = NULL, claimed_by = NULL, first_deferred_at = coalesce(first_deferred_at, ?), last_code = ?, last_response = ?, last_mx = ?, updated_at = ? WHERE id = ?",
          attempts, now + retryDelay(policy, attempts), now, o.code, o.response, o.mx, now, row.id,
        );
        // One delivery_delayed per recipient: when it is first deferred, not at every attempt.
        if (row.first_deferred_at === null) yield* event('delivery_delayed', { nextAttemptAt: new Date(now + retryDelay(policy, attempts)).toISOString() });
      }
      touched.add(row.email_id);
    }
    for (const emailId of touched) yield* refreshEmailStatus(emailId);
    return attempted;
  }, { acknowledged: false });
  // After the commit: a line must not report an outcome that was rolled back.
  for (const fields of attempted) app.log.info('delivery attempt', fields);
  for (const fields of attempted) app.metrics?.delivery(fields as DeliveryAttempt); // metrics: counted once committed, like the log line
}

// The domain, not the address: enough to follow a destination's trouble without a log full of recipients.
// The reply is kept for what did not go through, as a sysadmin reads it first.
function attemptLine(row: Claimed, o: RecipientOutcome | LocalFailure, outcome: string, attempt: number): Record<string, unknown> {
  return {
    emailId: row.email_id,
    domain: row.domain,
    outcome,
    code: o.code,
    enhanced: o.enhanced,
    mx: o.mx,
    tls: o.tls,
    attempt,
    ...(outcome === 'delivered' ? {} : { response: o.response.slice(0, 300) }),
  };
}
