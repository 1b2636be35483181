// Moving bytes between threads: a Uint8Array that owns its buffer can be transferred instead of copied, and
// what crosses back arrives as plain Uint8Arrays that callers want as Buffers. No threads are started here.
/**
 * A Uint8Array that owns its whole ArrayBuffer, so it can be moved to another thread: a small Buffer can be a
 * slice of Node's shared allocation pool, whose transfer would detach every other buffer in it. Anything
 * else is copied once.
 */
export function transferable(buf: Uint8Array): Uint8Array<ArrayBuffer> {
  const { buffer } = buf;
  if (buffer instanceof ArrayBuffer && buf.byteOffset === 0 && buf.byteLength === buffer.byteLength) return new Uint8Array(buffer);
  return new Uint8Array(buf);
}

/** A Buffer over a Uint8Array that crossed a thread boundary: structured clone delivers Buffers as plain Uint8Arrays. */
export const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** `value` with every Uint8Array in it (in place, at any depth of plain objects and arrays) a Buffer over the same bytes. */
export function withBuffers<T>(value: T): T {
  if (value instanceof Uint8Array) return (Buffer.isBuffer(value) ? value : asBuffer(value)) as T;
  if (Array.isArray(value)) value.forEach((v, i) => (value[i] = withBuffers(v)));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) (value as Record<string, unknown>)[k] = withBuffers(v);
  return value;
}

/** The items with contents another thread can take over without a copy; their buffers are added to `transfer`. */
export function movingContents<A extends { content: Buffer }>(items: A[], transfer: ArrayBuffer[]): A[] {
  return items.map((item) => {
    const content = transferable(item.content);
    transfer.push(content.buffer);
    return { ...item, content: content as Buffer };
  });
}
