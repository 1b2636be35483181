// The banner a domain's page shows while the box's own name (config `hostname`) cannot be right: the box then
// offers no MX or SPF record naming it (GET /domains/:id `hostnameProblem`), and says here what to change.

export interface HostnameProblem {
  hostname: string;
  setting: 'hostname';
  variable: 'MAILWRIGHT_HOSTNAME';
  message: string;
  fix: string;
}

export function HostnameBanner({ problem }: { problem: HostnameProblem }) {
  return (
    <div class="card" role="alert" data-testid="hostname-banner" style={{ marginBottom: '20px', borderColor: 'var(--warn)' }}>
      <h3 style={{ marginTop: 0 }}>This box's name is not ready for DNS</h3>
      <p style={{ margin: '0 0 8px' }}>{problem.message}</p>
      <p style={{ margin: '0 0 8px' }}>To fix: {problem.fix}.</p>
      <p class="muted" style={{ margin: 0, fontSize: '13px' }}>
        Until then the return path's MX and SPF records and the inbound MX record are not shown: they would name <span class="mono">{problem.hostname}</span>.
      </p>
    </div>
  );
}
