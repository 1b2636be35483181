// The render threads' side of render-pool.ts: a draft's or release's stored row rendered with the caller's
// data, exactly as render() does on the event loop. Reads nothing and writes nothing.
import { serveJobs } from '../threads/worker-pool.ts';
import { render, type Rendered, type RenderOptions } from './render.ts';
import { contentOf, type VersionRow } from './store.ts';

export interface RenderJob {
  version: VersionRow;
  data: Record<string, unknown>;
  options: RenderOptions;
}

serveJobs<RenderJob, Rendered>(async ({ version, data, options }) => ({
  // Structured clone keeps own keys own ("__proto__" included) but hands back a plain object: a null prototype
  // again leaves them the only keys there are, as in the request's data.
  result: render(contentOf(version), Object.assign(Object.create(null) as Record<string, unknown>, data), options),
}));
