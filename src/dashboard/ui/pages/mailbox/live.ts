// The mailbox as it changes under the page: mail that arrives and deliveries (the box's event stream), and the
// dashboard's own writes to mail and labels. The sidebar's counts and labels, the list and the reading pane
// follow useMailVersion(), so none of them waits for a reload.
import { useEffect, useState } from 'preact/hooks';
import { afterWrite, apiUrl } from '../../api.ts';
import { DELIVERY_EVENTS, listenForDelivery } from './delivery.tsx';

let version = 0;
const listeners = new Set<() => void>();
/** Subjects of mail that arrived, for whoever shows a notice (the mailbox). */
const arrivals = new Set<(subject: string) => void>();

export function mailChanged(): void {
  version++;
  listeners.forEach((l) => l());
}

// Writes to mail and labels change what the sidebar counts; saving a draft does not (sending it does).
const MAIL_WRITE = /^\/(emails|labels|threads)\b|^\/drafts\/[^/]+\/send\b/;
afterWrite.add((path) => MAIL_WRITE.test(path) && mailChanged());

/** A number that grows at each change: a load that depends on it reads again. */
export function useMailVersion(): number {
  const [seen, setSeen] = useState(version);
  useEffect(() => {
    const l = () => setSeen(version);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return seen;
}

/** Calls `notice` with the subject of each message that arrives while mounted. */
export function useArrivals(notice: (subject: string) => void): void {
  useEffect(() => {
    arrivals.add(notice);
    return () => void arrivals.delete(notice);
  }, []);
}

/** Follows the box's event stream while mounted: the sidebar does, on every page once signed in. */
export function useLiveMail(): void {
  useEffect(() => {
    const stream = new EventSource(apiUrl(`/events/stream?types=${['email.received', ...DELIVERY_EVENTS].join(',')}`));
    listenForDelivery(stream, mailChanged);
    stream.addEventListener('email.received', (e) => {
      let subject = '';
      try {
        subject = JSON.parse((e as MessageEvent).data)?.data?.email?.subject ?? '';
      } catch {}
      arrivals.forEach((f) => f(subject));
      mailChanged();
    });
    return () => stream.close();
  }, []);
}
