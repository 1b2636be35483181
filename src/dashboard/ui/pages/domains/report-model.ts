// The shapes of a domain's received reports as the API gives them (GET /domains/:id/dmarc-reports, .../summary,
// /domains/:id/tls-reports): only the fields the pages read.
export interface DmarcSource {
  sourceIp: string;
  ptr: string | null;
  messages: number;
  passed: number;
  failed: number;
  dkimAligned: number;
  spfAligned: number;
  dispositions: { none: number; quarantine: number; reject: number };
  reporters: string[];
  lastSeen: string;
}

export interface DmarcSummary {
  domain: string;
  totals: { reports: number; messages: number; passed: number; failed: number; sources: number; after: string; before: string };
  data: DmarcSource[];
  count: number;
  hasMore: boolean;
}

export interface DmarcReport {
  id: string;
  orgName: string;
  reportId: string;
  begin: string;
  end: string;
  messages: number;
  failed: number;
  policy: { p: string };
  /** The report's own mail passed DMARC. */
  authenticated: boolean;
}

export interface TlsPolicy {
  type: string;
  domain: string;
  successful: number;
  failed: number;
  failures: Array<{ resultType: string; failedSessions: number }>;
}

export interface TlsReport {
  id: string;
  orgName: string;
  begin: string;
  end: string;
  successful: number;
  failed: number;
  policies: TlsPolicy[];
}

export const percent = (share: number) => `${Math.round(share * 100)}%`;
