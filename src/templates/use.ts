// A template as a send uses it: the active release of an active template, rendered with the caller's data and
// no sample data, or a 400 that names the template and carries the findings. Reads only; the send path
// (send/submit) stores what comes out.
import type { App } from '../context.ts';
import type { Query } from '../db/query.ts';
import { ApiError, validationError } from '../errors.ts';
import { hasErrors, type Finding, type Rendered } from './render.ts';
import { renderVersion } from './render-pool.ts';
import { templateByRef, versionSize, type TemplateRow, type VersionSize } from './store.ts';
import type { TemplateContent, TemplateOrigin } from './content.ts';

/** The release a send by `ref` uses; 400 (naming `path`) when there is none to send. */
export function* releaseForSend(workspaceId: string, ref: string, path = 'template'): Query<{ template: TemplateRow; release: VersionSize }> {
  const template = yield* templateByRef(workspaceId, ref);
  if (!template) throw validationError(path, `no template "${ref}" in this workspace`);
  if (template.lifecycle === 'archived') {
    throw validationError(path, `template "${template.key}" is archived and cannot be sent: POST /templates/${template.id}/restore first`);
  }
  const release = template.active_version_id ? yield* versionSize(template.active_version_id) : undefined;
  if (!release) throw validationError(path, `template "${template.key}" has no published release yet: POST /templates/${template.id}/publish first`);
  return { template, release };
}

/** 400 carrying every finding when any is an error; each error naming a variable becomes a field error. */
export function refuseOnErrors(rendered: Rendered, key: string, dataPath: string): void {
  if (!hasErrors(rendered.findings)) return;
  const errors = rendered.findings.filter((f) => f.severity === 'error');
  const field = (f: Finding) => ({ path: f.variable ? `${dataPath}.${f.variable}` : dataPath, message: f.message });
  throw new ApiError(400, 'validation_error', `template "${key}" cannot be rendered: ${errors.map((f) => f.message).join('; ')}`, {
    errors: errors.map(field),
    findings: rendered.findings,
    findingsOmitted: rendered.findingsOmitted,
  });
}

/** The active release rendered for a real send (on a render thread when it is large: render-pool.ts). */
export async function renderForSend(
  app: Pick<App, 'store' | 'db' | 'config' | 'log' | 'templateRenders'>,
  workspaceId: string,
  use: { ref: string; data: Record<string, unknown>; dataPath?: string },
  keepUnsubscribe: (messageClass: TemplateContent['messageClass']) => boolean,
  messageClass?: TemplateContent['messageClass'],
): Promise<{ rendered: Rendered; messageClass: TemplateContent['messageClass']; origin: TemplateOrigin }> {
  const { template, release } = await app.store.read(releaseForSend(workspaceId, use.ref));
  const klass = messageClass ?? release.message_class;
  const rendered = await renderVersion(app, workspaceId, release, use.data, { useSampleData: false, keepUnsubscribe: keepUnsubscribe(klass) });
  refuseOnErrors(rendered, template.key, use.dataPath ?? 'template.data');
  return { rendered, messageClass: klass, origin: { templateId: template.id, versionId: release.id, test: false } };
}
