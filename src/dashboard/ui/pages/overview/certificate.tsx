// The Overview's certificate card: what STARTTLS and HTTPS present (names, issuer, expiry), where it comes from
// (ACME, the operator's files, self-signed), and ACME's last error with its next attempt (GET /account).
import { Badge } from '../../components/feedback.tsx';
import { when } from '../../components/format.tsx';
import type { TlsInfo } from './model.ts';

const SOURCE: Record<NonNullable<TlsInfo['source']>, string> = { acme: 'by ACME', files: 'from your files', 'self-signed': 'self-signed' };
const DAY = 86_400_000;
// With the year: a certificate can outlive this one (a self-signed one lasts two).
const date = (iso: string) => new Date(iso).toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

export function CertificateCard({ tls, hostname }: { tls: TlsInfo | null; hostname: string }) {
  if (!tls) return null;
  const days = Math.floor((Date.parse(tls.expiresAt) - Date.now()) / DAY);
  const failing = tls.acme?.lastError ?? null;
  const tone = days < 0 || failing ? 'bad' : days < 14 ? 'warn' : 'good';
  const issuer = /CN=([^\n]+)/.exec(tls.issuer)?.[1] ?? tls.issuer;
  return (
    <div class="card" aria-label="TLS certificate">
      <div class="row">
        <div class="muted grow">TLS certificate</div>
        <Badge tone={tone}>{days < 0 ? 'Expired' : failing ? 'Renewal failing' : `${days} days left`}</Badge>
      </div>
      <div style={{ margin: '6px 0', overflowWrap: 'anywhere' }}>{(tls.names.length ? tls.names : [hostname]).join(', ')}</div>
      <div class="muted" style={{ fontSize: '13px' }}>
        {tls.source ? `${SOURCE[tls.source]}, ` : ''}issued by {issuer}; expires {date(tls.expiresAt)}
      </div>
      {tls.acme && !failing && tls.source !== 'acme' && (
        <div class="muted" style={{ fontSize: '13px', marginTop: '4px' }}>
          ACME is on: the box serves this one until its first certificate is issued.
        </div>
      )}
      {failing && (
        <div role="alert" style={{ fontSize: '13px', marginTop: '6px', color: 'var(--bad)', overflowWrap: 'anywhere' }}>
          ACME failed {when(tls.acme?.lastErrorAt)}: {failing}
          {tls.acme?.retryAt ? ` · next attempt ${when(tls.acme.retryAt)}` : ''}
        </div>
      )}
    </div>
  );
}
