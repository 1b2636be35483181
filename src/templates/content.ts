// What a template's draft and each of its releases hold (API-SPEC.md section 2, Hosted template): the parts
// with their {{variable_key}} placeholders, the declared variables and sample data. Plain data shared by the
// store, the renderer and the starters; validation of a request's content lives in routes.ts.

export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'date', 'url', 'email'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

export interface Variable {
  key: string;
  type: VariableType;
  required: boolean;
}

export interface TemplateContent {
  name: string;
  subjectTemplate: string;
  htmlTemplate: string;
  textTemplate: string;
  variables: Variable[];
  /** Keyed by variable key; a null-prototype object, so `__proto__` or `constructor` are plain keys. */
  sampleData: Record<string, unknown>;
  /** Sends made with the template default to it; marketing content is expected to carry {{unsubscribe_url}}. */
  messageClass: 'transactional' | 'marketing';
}

/** Where a stored email's content came from (emails.template_id, template_version_id, is_test). */
export interface TemplateOrigin {
  templateId: string;
  versionId: string;
  test: boolean;
}

/** Filled by the box for each recipient of marketing mail with their one-click unsubscribe link. */
export const UNSUBSCRIBE_PLACEHOLDER = '{{unsubscribe_url}}';
export const UNSUBSCRIBE_KEY = 'unsubscribe_url';

export const STARTER_NAMES = ['blank', 'welcome', 'password-reset', 'receipt', 'notification'] as const;
export type StarterName = (typeof STARTER_NAMES)[number];
