// The DNS records a domain needs, with their live status: a table on a desktop, a card a record on a phone,
// each name and value with a copy button, and the host to type where the provider's form wants it relative.
import { Badge } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';
import { useNarrow } from '../../components/page.tsx';
import { RECORD_LABEL, RECORD_STATUS, type DnsRecord, type Domain, type Provider } from './model.ts';

/** The second DKIM record of a domain that also signs with ed25519 (dkim_ed25519, RFC 8463). */
const isEd25519 = (r: DnsRecord) => r.record === 'DKIM' && /\bk=ed25519\b/.test(r.value);

function hostFor(r: DnsRecord, domain: Domain, hosts: Provider['recordHosts'] | undefined) {
  if (!hosts) return null;
  if (isEd25519(r)) {
    // The provider's host names the RSA selector: the same host with the ed25519 record's selector.
    const rsa = domain.records.find((x) => x.record === 'DKIM' && !isEd25519(x));
    return rsa && hosts.dkim ? hosts.dkim.replace(rsa.name.split('.')[0], r.name.split('.')[0]) : null;
  }
  if (r.record === 'MTA-STS' || r.record === 'MTA-STS-HOST' || r.record === 'TLS-RPT') {
    // Named under the domain itself, whose host in the zone is inboundMx (`@` at the apex).
    const label = r.name.slice(0, -(domain.name.length + 1));
    return hosts.inboundMx === '@' ? label : `${label}.${hosts.inboundMx}`;
  }
  return { DKIM: hosts.dkim, SPF: hosts.returnPathSpf, MX: hosts.returnPathMx, DMARC: hosts.dmarc }[r.record];
}

/** A value to paste at the DNS provider, with its copy button. */
export function Copyable({ text }: { text: string }) {
  return (
    <div class="row" style={{ flexWrap: 'nowrap', alignItems: 'flex-start' }}>
      <span class="mono grow" style={{ wordBreak: 'break-all' }}>
        {text}
      </span>
      <CopyButton text={text} />
    </div>
  );
}

/** `hosts`: what to type in the provider's form (relative to the zone), shown under the full name. */
export function Records({ domain, hosts }: { domain: Domain; hosts: Provider['recordHosts'] | undefined }) {
  const narrow = useNarrow();
  const recordCell = (r: DnsRecord) => (
    <>
      <strong>{isEd25519(r) ? 'DKIM (ed25519)' : RECORD_LABEL[r.record][0]}</strong>
      <div class="muted" style={{ fontSize: '12px' }}>
        {isEd25519(r) ? 'Second signature, recommended' : RECORD_LABEL[r.record][1]}
      </div>
    </>
  );
  const status = (r: DnsRecord) => <Badge tone={RECORD_STATUS[r.status][0]}>{RECORD_STATUS[r.status][1]}</Badge>;
  const host = (r: DnsRecord) => {
    const h = hostFor(r, domain, hosts);
    return h && h !== r.name ? <div class="muted" style={{ fontSize: '12px' }}>{`Host in your DNS panel: ${h}`}</div> : null;
  };
  return (
    <>
      <h2 style={{ marginTop: '8px' }}>DNS records</h2>
      <p class="muted" style={{ marginTop: '-6px' }}>
        Add these at your DNS provider. New records are usually visible within minutes, sometimes up to an hour.
      </p>
      {narrow ? (
        <div style={{ display: 'grid', gap: '10px' }} aria-label="DNS records">
          {domain.records.map((r) => (
            <div class="card" data-record={r.record} style={{ padding: '14px', display: 'grid', gap: '8px' }}>
              <div class="row">
                <span class="grow">{recordCell(r)}</span>
                <Badge tone="info">{r.type}</Badge>
                {status(r)}
              </div>
              <div>
                <small class="muted">Name</small>
                <Copyable text={r.name} />
                {host(r)}
              </div>
              <div>
                <small class="muted">Value{r.priority !== undefined ? ` · priority ${r.priority}` : ''}</small>
                <Copyable text={r.value} />
              </div>
            </div>
          ))}
        </div>
      ) : (
        <table class="table" aria-label="DNS records">
          <thead>
            <tr>
              <th>Record</th>
              <th>Type</th>
              <th>Name</th>
              <th style={{ width: '40%' }}>Value</th>
              <th>Priority</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {domain.records.map((r) => (
              <tr data-record={r.record}>
                <td>{recordCell(r)}</td>
                <td>
                  <Badge tone="info">{r.type}</Badge>
                </td>
                <td>
                  <Copyable text={r.name} />
                  {host(r)}
                </td>
                <td>
                  <Copyable text={r.value} />
                </td>
                <td>{r.priority ?? <span class="muted">—</span>}</td>
                <td style={{ whiteSpace: 'nowrap' }}>{status(r)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
