// A client of the box's live event stream (GET /events/stream) for tests: reads the Server-Sent Events as they
// come and hands back the complete messages so far, each with its id and its parsed data.

export interface StreamMessage<T> {
  id: number;
  data: T;
}

/** The complete messages in a stream's text so far (a read may end inside one). */
export function streamMessages<T>(text: string): Array<StreamMessage<T>> {
  return text
    .slice(0, text.lastIndexOf('\n\n') + 1)
    .split('\n\n')
    .filter((m) => m.includes('data: '))
    .map((m) => ({ id: Number(/^id: (\d+)$/m.exec(m)![1]), data: JSON.parse(/^data: (.*)$/m.exec(m)![1]) as T }));
}

/** Opens the stream at `url` with a key (and a Last-Event-ID) and reads it until closed. */
export async function openEventStream<T>(url: string, key: string, lastEventId?: number) {
  const ctl = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}) }, signal: ctl.signal });
  const reader = res.body!.getReader();
  let text = '';
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text += new TextDecoder().decode(value);
    }
  })();
  return {
    res,
    messages: () => streamMessages<T>(text),
    connected: () => text.includes(': connected'),
    close: () => ctl.abort(),
  };
}
