// Developers: API keys (keys.tsx), webhooks and an endpoint's page (webhooks.tsx, webhook.tsx, deliveries.tsx),
// the suppression list (suppressions.tsx) and the event log of one email (events.tsx), as tabs. Routed inside:
// /developers/<tab>[/<webhook id>], /developers/events?email=.
import type { Me } from '../../session.ts';
import { Empty } from '../../components/feedback.tsx';
import { Page, useNarrow } from '../../components/page.tsx';
import { useLocation } from '../../router.ts';
import { Keys } from './keys.tsx';
import { Webhooks } from './webhooks.tsx';
import { WebhookPage } from './webhook.tsx';
import { Suppressions } from './suppressions.tsx';
import { EventLog } from './events.tsx';

const TABS: Array<[string, string]> = [
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['suppressions', 'Suppressions'],
  ['events', 'Event log'],
];

export function Developers(_: { me: Me }) {
  const { path } = useLocation();
  const [, , tab = 'keys', sub] = path.split('/');
  const narrow = useNarrow();
  return (
    <Page title="Developers">
      <nav class="tabs" role="tablist" aria-label="Developer tools" style={{ overflowX: 'auto', overflowY: 'hidden' }}>
        {TABS.map(([key, label]) => (
          <a href={`/developers/${key}`} role="tab" aria-selected={tab === key} class={tab === key ? 'active' : ''} style={{ whiteSpace: 'nowrap', ...(narrow ? { padding: '8px 9px' } : {}) }}>
            {label}
          </a>
        ))}
      </nav>
      {tab === 'keys' ? (
        <Keys />
      ) : tab === 'webhooks' ? (
        sub ? (
          <WebhookPage key={sub} id={sub} />
        ) : (
          <Webhooks />
        )
      ) : tab === 'suppressions' ? (
        <Suppressions />
      ) : tab === 'events' ? (
        <EventLog />
      ) : (
        <Empty title="Not here">
          <a href="/developers">Back to API keys</a>
        </Empty>
      )}
    </Page>
  );
}
