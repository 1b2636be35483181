// A domain's DKIM key rotation: start one, publish the new record, and see the new key take over only once DNS
// serves it (the box checks at Verify and hourly), while the old record must stay published until its date.
import { api } from '../../api.ts';
import { tell } from '../../components/action.ts';
import { Badge } from '../../components/feedback.tsx';
import { CopyButton } from '../../components/forms.tsx';

export interface Rotation {
  pending: { selector: string; record: { type: string; name: string; value: string }; startedAt: string } | null;
  retiring: Array<{ selector: string; record: { type: string; name: string; value: string }; keepPublishedUntil: string }>;
}

export function DkimRotation({ domainId, selector, rotation, onChange }: { domainId: string; selector: string; rotation: Rotation; onChange: () => void }) {
  const rotate = () =>
    tell(async () => {
      await api(`/domains/${domainId}/dkim/rotate`, { method: 'POST', body: {} });
      onChange();
    }, 'A new DKIM key is ready: publish its record');
  return (
    <>
      <h2 style={{ marginTop: '28px' }}>DKIM key</h2>
      <div class="card" data-testid="dkim-rotation">
        <div class="row">
          <span class="grow">
            Signing with selector <code>{selector}</code>.
          </span>
          {!rotation.pending && (
            <button class="button small" onClick={rotate}>
              Rotate key
            </button>
          )}
        </div>
        {rotation.pending && (
          <>
            <p>
              <Badge tone="warn">Waiting for DNS</Badge> Publish this record. The new key starts signing as soon as DNS serves it (press Verify DNS, or wait for the hourly check); until then the current key keeps signing.
            </p>
            <table class="table">
              <tbody>
                <tr>
                  <td>{rotation.pending.record.type}</td>
                  <td class="break mono">{rotation.pending.record.name}</td>
                  <td>
                    <CopyButton text={rotation.pending.record.name} label="Copy name" />
                  </td>
                </tr>
                <tr>
                  <td />
                  <td class="break mono">{rotation.pending.record.value}</td>
                  <td>
                    <CopyButton text={rotation.pending.record.value} label="Copy value" />
                  </td>
                </tr>
              </tbody>
            </table>
          </>
        )}
        {rotation.retiring.map((k) => (
          <p class="muted">
            Keep the record <code>{k.record.name}</code> published until {new Date(k.keepPublishedUntil).toLocaleDateString()}: mail signed with the old key may still be on its way.
          </p>
        ))}
      </div>
    </>
  );
}
