// What a DNS check of a domain announces, in the transaction that records it (domains.ts recordCheck): the
// domain becoming verified (domain.verified, and its audit row), and, from the periodic re-check, records that
// were verified and are now wrong or gone (domain.dns_changed, naming each record with what DNS serves now).
// A temporary DNS failure (no answer) is neither: only a definite answer counts.
import { type AuditActor, recordAudit } from '../account/audit.ts';
import type { Query } from '../db/query.ts';
import type { CheckState, DnsIssue, InboundCheck, RecordCheck } from '../dns/verify.ts';
import { recordSlot } from '../dns/records.ts';
import { addDomainEvent } from './domain-events.ts';

interface Checked {
  id: string;
  workspace_id: string;
  name: string;
  status: string;
  dns_state: string | null;
}

export interface ChangedRecord {
  record: string;
  type: string;
  name: string;
  expected: string;
  /** What DNS serves now; empty when the record is gone. */
  found: string[];
  change: 'changed' | 'gone';
}

export function* announceCheck(now: number, c: { before: Checked; after: Checked; results: RecordCheck[]; inbound: InboundCheck; mode: 'manual' | 'periodic'; actor: AuditActor }): Query<void> {
  const { before, after } = c;
  const domain = { id: after.id, name: after.name, status: after.status };
  if (after.status === 'verified' && before.status !== 'verified') {
    yield* addDomainEvent(now, { workspaceId: after.workspace_id, domainId: after.id, type: 'domain.verified', data: { domain, previousStatus: before.status } });
    yield* recordAudit(now, c.actor, { workspaceId: after.workspace_id, action: 'domain.verified', target: { type: 'domain', id: after.id, name: after.name }, data: { previousStatus: before.status } });
  }
  if (c.mode !== 'periodic') return;
  const changed = changedRecords(before.dns_state, c.results, c.inbound);
  if (changed.length) {
    yield* addDomainEvent(now, { workspaceId: after.workspace_id, domainId: after.id, type: 'domain.dns_changed', data: { domain, previousStatus: before.status, records: changed } });
  }
}

/** The records the last check found right and this one finds wrong or missing. */
function changedRecords(previous: string | null, results: RecordCheck[], inbound: InboundCheck): ChangedRecord[] {
  if (!previous) return [];
  const was = JSON.parse(previous) as { records?: Record<string, CheckState>; checks?: { mx?: boolean } };
  const changed: ChangedRecord[] = [];
  const add = (issue: DnsIssue | undefined) => {
    if (issue) changed.push({ record: issue.record, type: issue.type, name: issue.name, expected: issue.expected, found: issue.found, change: issue.found.length ? 'changed' : 'gone' });
  };
  for (const r of results) if (r.state === 'failed' && was.records?.[recordSlot(r)] === 'verified') add(r.issue);
  if (inbound.state === 'failed' && was.checks?.mx === true) add(inbound.issue);
  return changed;
}
