// Test-only: the spam filter's scene. The inbound scene, mail of the 2002 SpamAssassin corpus (spam-1 and
// easy-ham-1 only, through the benchmark's loader, which refuses the 2003 folders) made deliverable, and the
// owner's side over the API: deliver a message and read its record, set its category, wait until what the
// owner taught is learned, and a second workspace with an inbox of its own.
import { request, seedWorkspace } from './app.ts';
import { startInboundScene, type InboundScene } from './inbound.ts';
import { BOX } from './outbound.ts';
import { splitCorpus, type CorpusMessage, type CorpusSplit } from '../../scripts/bench/spam-corpus-data.ts';

export interface SpamScene extends InboundScene {
  /** Delivers over SMTP to the scene's inbox (or `to`) and answers the stored record (null: refused, with the reply). */
  receiveRaw(raw: string | Buffer, opts?: { from?: string; to?: string[]; key?: string }): Promise<{ reply: string; email: any | null }>;
  patch(id: string, body: Record<string, unknown>, key?: string): Promise<{ status: number; body: any }>;
  /** GET /spam/filter of the workspace, once nothing waits to be learned. */
  learned(key?: string): Promise<{ state: string; learned: { spam: number; ham: number }; pending: number }>;
  /** Another workspace with its own inbound domain and inbox. */
  otherWorkspace(name: string, domain: string): Promise<{ key: string; inbox: string }>;
}

let corpus: CorpusSplit | null = null;
/** The corpus, split once (fixed seed) into training, validation and held-out mail. */
export const corpusSplit = () => (corpus ??= splitCorpus());

/** A corpus message as SMTP carries it: its mbox "From " line dropped, CRLF line ends. */
export function deliverable(m: CorpusMessage): Buffer {
  const text = m.raw.toString('latin1').replace(/^From [^\n]*\n/, '');
  return Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'latin1');
}

export async function startSpamScene(opts: Parameters<typeof startInboundScene>[0] = {}): Promise<SpamScene> {
  // Hundreds of sessions a minute from 127.0.0.1: past the per-client connection rate meant for strangers.
  const scene = await startInboundScene({ ...opts, env: { MAILWRIGHT_SMTP_CONNECTION_RATE_PER_IP: '0', ...opts.env } });
  const { t, key: ownKey } = scene;
  const get = async (id: string, key: string) => (await request(`${t.api}/emails/${id}`, { key })).body;
  return {
    ...scene,
    async receiveRaw(raw, { from = 'corpus@sender.example', to, key = ownKey } = {}) {
      const reply = await scene.deliver(raw, { from, to });
      const id = /queued as (em_\S+)/.exec(reply.text)?.[1];
      return { reply: `${reply.code} ${reply.text}`, email: id ? await get(id, key) : null };
    },
    patch: (id, body, key = ownKey) => request(`${t.api}/emails/${id}`, { method: 'PATCH', body, key }),
    async learned(key = ownKey) {
      for (const end = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 50))) {
        const r = await request(`${t.api}/spam/filter`, { key });
        if (r.status !== 200) throw new Error(`GET /spam/filter: ${r.status} ${JSON.stringify(r.body)}`);
        if (r.body.pending === 0) return r.body;
        if (Date.now() > end) throw new Error(`still ${r.body.pending} corrections to learn after 60 s`);
      }
    },
    async otherWorkspace(name, domain) {
      const { key } = await seedWorkspace(t, { workspace: name });
      const d = await scene.verifiedDomain(domain, key);
      await request(`${t.api}/domains/${d.id}/inbound/setup`, { method: 'POST', key });
      scene.dns.set(domain, 'MX', [{ preference: 10, exchange: BOX }]);
      const v = await request(`${t.api}/domains/${d.id}/inbound/verify`, { method: 'POST', key });
      if (v.body.status !== 'ready') throw new Error(`inbound for ${domain} is not ready: ${JSON.stringify(v.body)}`);
      const inbox = await request(`${t.api}/inboxes`, { body: { domain_id: d.id, local_part: 'hello', name: 'hello' }, key });
      return { key, inbox: inbox.body.address as string };
    },
  };
}
