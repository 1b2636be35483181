// Test-only: template content as the renderer takes it, every field defaulted, and data as a body gives it
// (no prototype, so `constructor` is a name like any other).
import type { TemplateContent, Variable } from '../templates/content.ts';
import type { RenderOptions } from '../templates/render.ts';

export const SEND: RenderOptions = { useSampleData: false, keepUnsubscribe: false };

export const data = (o: Record<string, unknown>) => Object.assign(Object.create(null) as Record<string, unknown>, o);

export const content = (parts: Partial<TemplateContent> & { variables?: Variable[] }): TemplateContent => ({
  name: 't',
  subjectTemplate: '',
  htmlTemplate: '',
  textTemplate: '',
  sampleData: data({}),
  messageClass: 'transactional',
  variables: [],
  ...parts,
});
