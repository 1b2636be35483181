// The networks that delivered mail to one listener (a 250 after DATA): the "good history" that lets a client
// into the SMTP slots kept back from strangers (smtp_reserved_clients). In memory, bounded, least recently
// delivering first out; it does no I/O and is lost on restart (see limitClients in session.ts for why).

/** Networks remembered: 10,000 /24s or /64s is about 1 MB, more distinct senders than a box sees in weeks. */
export const KNOWN_NETWORKS_MAX = 10_000;

export class KnownNetworks {
  // A Set iterates in insertion order: deleting and adding again on each delivery keeps the least recent first.
  private readonly networks = new Set<string>();

  constructor(private readonly max = KNOWN_NETWORKS_MAX) {}

  /** A message from `network` was accepted. */
  delivered(network: string): void {
    this.networks.delete(network);
    this.networks.add(network);
    if (this.networks.size > this.max) this.networks.delete(this.networks.values().next().value as string);
  }

  has(network: string): boolean {
    return this.networks.has(network);
  }

  get size(): number {
    return this.networks.size;
  }
}
