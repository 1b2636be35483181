// The findings of one render, bounded: a 1 MB template of distinct bad placeholders made 230,000 of them (33 MB
// of JSON) before this list kept at most MAX_FINDINGS. Errors are kept first, so a render with an error always
// shows one (a send refuses on it); each message is clipped, and what was left out is counted, never built.

export type Severity = 'error' | 'warning' | 'info';

export interface Finding {
  severity: Severity;
  code: string;
  message: string;
  variable?: string;
}

/** Findings a render returns at most; the rest are counted in `omitted`. */
export const MAX_FINDINGS = 100;
/** Characters of one finding's message at most (a placeholder as written is up to 204 of them). */
export const MAX_FINDING_MESSAGE = 300;

const RANK: Severity[] = ['error', 'warning', 'info'];

export interface FindingList {
  /** Records a finding; `make` is called only when the finding may still be kept. */
  note(severity: Severity, make: () => Omit<Finding, 'severity'>): void;
  /** The kept findings in the order they were noted, and how many were left out. */
  done(): { findings: Finding[]; omitted: number };
}

export function findingList(max = MAX_FINDINGS): FindingList {
  let noted = 0;
  // Per severity, up to `max` each (with the order they were noted): done() then fills the list by rank.
  const kept: Record<Severity, Array<[number, Finding]>> = { error: [], warning: [], info: [] };
  return {
    note(severity, make) {
      const order = noted++;
      const list = kept[severity];
      if (list.length >= max) return;
      const f = make();
      const message = f.message.length > MAX_FINDING_MESSAGE ? `${f.message.slice(0, MAX_FINDING_MESSAGE - 3)}...` : f.message;
      list.push([order, { severity, ...f, message }]);
    },
    done() {
      const chosen: Array<[number, Finding]> = [];
      for (const severity of RANK) chosen.push(...kept[severity].slice(0, max - chosen.length));
      chosen.sort((a, b) => a[0] - b[0]);
      return { findings: chosen.map(([, f]) => f), omitted: noted - chosen.length };
    },
  };
}
