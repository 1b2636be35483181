// Try mode's transport (mailwright try): mail for the local domains goes to the box's own SMTP listener, as any
// sender's would, so the box receives its own mail; mail for every other domain is kept in the local outbox, a
// `delivered` outcome from "local outbox" with nothing sent. It must never look a name up or connect anywhere
// but the box's own listener: serve never builds it.
import { Deliverer, type DelivererOptions, type Transport } from './deliver.ts';
import { checkAddresses, outcomes, settle, undecided, type OutboundMessage, type RecipientOutcome, type Verdict } from './outcome.ts';
import type { Relay } from './relays.ts';

/** What outcomes, events and the queue's log report as the host of a kept message. */
export const LOCAL_OUTBOX = 'local outbox';

const KEPT: Verdict = {
  result: 'delivered',
  code: 250,
  enhanced: '2.0.0',
  response: '250 2.0.0 Kept in the local outbox (mailwright try): not sent',
  mx: LOCAL_OUTBOX,
  tls: false,
  tlsVerified: false,
  tlsError: null,
  tlsPolicy: 'none',
};

const within = (domain: string, parent: string) => domain === parent || domain.endsWith(`.${parent}`);

export class LocalOutbox implements Transport {
  private readonly own: Deliverer;

  constructor(
    private readonly localDomains: string[],
    /** The box's own MX listener, where mail for the local domains (and their subdomains) goes. */
    ownSmtp: { host: string; port: number },
    opts: Omit<DelivererOptions, 'relayUrl' | 'relays'>,
  ) {
    // A [[relay]] rule per local domain to the own listener: an address, so no lookup; STARTTLS with the box's
    // own (self-signed) certificate, which is not verified.
    const url = `smtp://${ownSmtp.host.includes(':') ? `[${ownSmtp.host}]` : ownSmtp.host}:${ownSmtp.port}`;
    this.own = new Deliverer({ ...opts, relayUrl: null, relays: [{ match: localDomains.map((domain) => ({ on: 'recipient' as const, domain })), url, tlsVerify: false }] });
  }

  private isLocal(domain: string): boolean {
    const lower = domain.toLowerCase();
    return this.localDomains.some((d) => within(lower, d));
  }

  relayFor(_senderDomain: string | null, recipientDomain: string): Relay | null {
    return this.isLocal(recipientDomain) ? this.own.relayFor(null, recipientDomain) : null;
  }

  async deliver(domain: string, messages: OutboundMessage[], relay: Relay | null = null): Promise<RecipientOutcome[]> {
    if (this.isLocal(domain)) return this.own.deliver(domain, messages, relay ?? this.own.relayFor(null, domain));
    const works = messages.map(checkAddresses);
    for (const w of works) settle(w, undecided(w), KEPT);
    return outcomes(works);
  }

  /** Try mode takes no relays: nothing it sends may leave the machine. */
  setRelays(): void {}

  close(): Promise<void> {
    return this.own.close();
  }
}
