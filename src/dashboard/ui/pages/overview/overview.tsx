// Overview: how the workspace stands this month and what needs attention. Usage against the held plans and
// reputation (GET /account, with "Resume sending" when paused: cards.tsx), mail over 7/30/90 days (GET
// /analytics, activity.tsx), the outbound queue (GET /queue), the TLS certificate (GET /account, certificate.tsx)
// and doctor's DNS findings (GET /doctor, health.tsx). Each part loads alone.
import { api } from '../../api.ts';
import { ErrorBox, Loading } from '../../components/feedback.tsx';
import { bytes } from '../../components/format.tsx';
import { useLoad } from '../../components/load.ts';
import { Page } from '../../components/page.tsx';
import { useLocation } from '../../router.ts';
import type { Me } from '../../session.ts';
import { Activity, WINDOWS } from './activity.tsx';
import { PausedBanner, QueueCard, ReputationCard } from './cards.tsx';
import { Doctor } from './health.tsx';
import { CertificateCard } from './certificate.tsx';
import { count, type Account, type Health, type QueueState } from './model.ts';
import { UsageMeter } from './usage.tsx';

export function Overview(_: { me: Me }) {
  const { query } = useLocation();
  const days = WINDOWS.find((d) => String(d) === query.get('days')) ?? 30;
  const account = useLoad(() => api<Account>('/account'));
  const queue = useLoad(() => api<QueueState>('/queue'));
  const doctor = useLoad(() => api<Health>('/doctor'));
  const refresh = () => [account, queue, doctor].forEach((s) => s.reload());
  return (
    <Page
      title="Overview"
      actions={
        <button class="button" onClick={refresh}>
          Refresh
        </button>
      }
    >
      {account.data?.access.sendingPaused && <PausedBanner access={account.data.access} reputation={account.data.reputation} onResumed={account.reload} />}
      <div class="cards">
        {account.error ? (
          <div class="card" style={{ gridColumn: '1 / -1' }}>
            <ErrorBox message={account.error} retry={account.reload} />
          </div>
        ) : !account.data ? (
          <div class="card">
            <Loading label="Loading usage" />
          </div>
        ) : (
          <>
            <UsageMeter label="Recipients this month" used={account.data.usage.recipients.used} limit={account.data.usage.recipients.limit} format={count} resets={account.data.usage.periodEnd} />
            <UsageMeter label="Attachments this month" used={account.data.usage.attachmentBytes.used} limit={account.data.usage.attachmentBytes.limit} format={bytes} resets={account.data.usage.periodEnd} />
            <ReputationCard reputation={account.data.reputation} />
          </>
        )}
        <QueueCard state={queue} />
        {account.data && <CertificateCard tls={account.data.infrastructure.tls} hostname={account.data.infrastructure.hostname} />}
      </div>
      <Activity days={days} />
      <Doctor state={doctor} />
    </Page>
  );
}
