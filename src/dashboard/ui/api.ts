// The dashboard's only way to the box: the public API under /api/v1 with the session cookie (same origin, so
// the browser adds Sec-Fetch-Site and the CSRF rule lets writes through). Errors keep the API's envelope.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: any = null,
  ) {
    super(message);
  }
}

/** The API's answer for a list: a page of items, how many there are in all, and whether more follow. */
export interface List<T> {
  data: T[];
  count: number;
  hasMore: boolean;
}

/** The address of an API resource, also for the browser to load it itself (a frame, a download, an event stream). */
export const apiUrl = (path: string) => `/api/v1${path}`;

/** Set by the app: what to do when the session has ended (go to the login page). */
export const session = { onExpired: () => {} };

/** Told of each write the box accepted (path and method): what shows mail and labels re-reads after one. */
export const afterWrite = new Set<(path: string, method: string) => void>();

export async function api<T = any>(path: string, opts: { method?: string; body?: unknown; headers?: Record<string, string>; quiet?: boolean } = {}): Promise<T> {
  const method = opts.method ?? (opts.body === undefined ? 'GET' : 'POST');
  const res = await fetch(apiUrl(path), {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    // A 401 mid-session means it ended; `quiet` is for asking whether there is one at all.
    if (res.status === 401 && !opts.quiet && !path.startsWith('/auth/') && !path.startsWith('/setup')) session.onExpired();
    throw new ApiError(res.status, body?.error?.code ?? 'error', body?.error?.message ?? `The box answered ${res.status}`, body);
  }
  if (method !== 'GET') afterWrite.forEach((f) => f(path, method));
  return body as T;
}

/** A file upload with progress (fetch has no upload progress): the raw bytes as the body, as the drafts API takes them. */
export function upload(path: string, file: File, onProgress: (fraction: number) => void): Promise<any> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', apiUrl(path));
    xhr.setRequestHeader('content-type', file.type || 'application/octet-stream');
    xhr.setRequestHeader('x-filename', `UTF-8''${encodeURIComponent(file.name)}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      let body: any = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body?.error?.code ?? 'error', body?.error?.message ?? `The upload failed (${xhr.status})`, body));
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The upload did not reach the box'));
    xhr.send(file);
  });
}

export const qs = (params: Record<string, string | number | boolean | undefined | null>) =>
  Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
