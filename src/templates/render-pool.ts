// Where a hosted template is rendered. A small one here, at once: a typical transactional template with its
// data costs tens of microseconds. A large one on the render threads (threads/fair-pool.ts): at most
// RENDERS_PER_WORKSPACE of one workspace at a time, a bounded line (429 past it), each render with a wall-clock
// budget (render_timeout, 503 past it). So a workspace rendering megabytes of template never holds the event
// loop that answers every other workspace's API and SMTP (catalogue RES-16).
import type { App } from '../context.ts';
import type { Config } from '../config/config.ts';
import { ApiError, notFound } from '../errors.ts';
import { Busy, FairPool } from '../threads/fair-pool.ts';
import { JobTimeout } from '../threads/worker-pool.ts';
import { render, type Rendered, type RenderOptions } from './render.ts';
import type { RenderJob } from './render-worker.ts';
import { contentOf, versionById, type VersionSize } from './store.ts';
import type { TemplateContent } from './content.ts';

/** Content (characters of all its columns) rendered on the event loop at most; larger goes to a thread. */
export const INLINE_MAX_CHARS = 64 * 1024;
/** Characters an inline render may read and write at most (renderWork); more goes to a thread. */
export const INLINE_MAX_WORK = 256 * 1024;
export const RENDERS_PER_WORKSPACE = 2;
export const WAITING_PER_WORKSPACE = 8;
export const WAITING_IN_ALL = 32;
// Linux nice of the render threads: on a busy box the event loop, the writer and the analysis of received mail
// get about three times their share (an idle box renders at full speed). Not the signing threads' 19: someone
// waits for a render, and it has a budget.
const RENDER_NICE = 5;

/** The render threads app.ts starts with the box (none runs until a large template is rendered). */
export function createRenderPool(config: Pick<Config, 'renderTimeout'>, size: number): FairPool<unknown, unknown> {
  return new FairPool({
    name: 'render',
    module: new URL('./render-worker.ts', import.meta.url),
    size,
    perKey: RENDERS_PER_WORKSPACE,
    waitingPerKey: WAITING_PER_WORKSPACE,
    waitingTotal: WAITING_IN_ALL,
    // Rendering is pure, so a render beside one past its budget can run again on a new thread.
    jobTimeoutMs: config.renderTimeout,
    // A render holds its template, output (at most 2 MiB a part) and findings' keys: tens of MiB at worst.
    resourceLimits: { maxOldGenerationSizeMb: 128 },
    nice: RENDER_NICE,
  });
}

/**
 * `version` rendered with `data`: here when it is small, else on a render thread, which reads the row only when
 * its turn comes (a line of waiting renders holds ids, not megabytes). 429 too_many_renders when the
 * workspace's line is full, 503 render_timeout past the budget.
 */
export async function renderVersion(app: Pick<App, 'store' | 'config' | 'log' | 'templateRenders'>, workspaceId: string, version: VersionSize, data: Record<string, unknown>, options: RenderOptions): Promise<Rendered> {
  if (version.chars <= INLINE_MAX_CHARS) {
    const row = await app.store.read(versionById(version.id));
    if (!row) throw notFound('Template version');
    const content = contentOf(row);
    if (renderWork(content, data, options) <= INLINE_MAX_WORK) return render(content, data, options);
  }
  const made = async () => {
    const row = await app.store.read(versionById(version.id));
    if (!row) throw notFound('Template version');
    return { job: { version: row, data, options } satisfies RenderJob };
  };
  try {
    return (await app.templateRenders.run(workspaceId, made)) as Rendered;
  } catch (err) {
    if (err instanceof Busy) {
      throw new ApiError(429, 'too_many_renders', `Too many large template renders of this workspace at once (at most ${RENDERS_PER_WORKSPACE} running and ${WAITING_PER_WORKSPACE} waiting); retry after ${err.retryAfterSeconds} s`, {
        headers: { 'retry-after': String(err.retryAfterSeconds) },
      });
    }
    if (err instanceof JobTimeout) {
      // Rendering is linear in bounded input, so this is a box short of CPU (or a template worth a look).
      app.log.warn('template render ran past its budget', { workspaceId, versionId: version.id, chars: version.chars, budgetMs: app.config.renderTimeout });
      const seconds = app.config.renderTimeout / 1000;
      throw new ApiError(503, 'render_timeout', `Rendering the template ran past its ${seconds} s budget (render_timeout); nothing was rendered or sent. Retry later, or make the template smaller`, {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(seconds))) },
      });
    }
    throw err;
  }
}

// What one placeholder costs beyond its value, in characters' worth: matching, looking up, maybe a finding (about
// 0.2 µs, as much as copying some 60 characters).
const PLACEHOLDER_COST = 64;

/**
 * An upper bound of the characters a render reads and writes: each part, and each of its placeholders with its
 * own cost, filled with the longest value there is, escaped (one character becomes at most six), and each
 * declared variable's value checked once. Counted only for content under INLINE_MAX_CHARS, so counting is cheap.
 */
export function renderWork(content: TemplateContent, data: Record<string, unknown>, options: RenderOptions): number {
  const longest = Math.max(longestValue(data), options.useSampleData ? longestValue(content.sampleData) : 0);
  let work = content.variables.length * longest;
  for (const part of [content.subjectTemplate, content.htmlTemplate, content.textTemplate]) work += part.length + openings(part) * (PLACEHOLDER_COST + longest * 6);
  return work;
}

function longestValue(values: Record<string, unknown>): number {
  let longest = 0;
  // At most 1,000 keys (send/request.ts templateData, and sample data holds declared variables only).
  for (const key in values) {
    const v = values[key];
    // A number or boolean prints in at most 24 characters; anything else renders as nothing.
    const n = typeof v === 'string' ? v.length : typeof v === 'number' || typeof v === 'boolean' ? 24 : 0;
    if (n > longest) longest = n;
  }
  return longest;
}

/** How many `{{` there are: every placeholder starts with one. */
function openings(part: string): number {
  let n = 0;
  for (let i = part.indexOf('{{'); i !== -1; i = part.indexOf('{{', i + 2)) n++;
  return n;
}
