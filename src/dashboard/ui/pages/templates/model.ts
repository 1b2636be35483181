// What the Templates pages read from the API (a template, its draft and releases with their usage, a render
// with its findings), and the editor's handle that the page's actions use.

export type Lifecycle = 'active' | 'archived';
export type VarType = 'string' | 'number' | 'boolean' | 'date' | 'url' | 'email';
export type MessageClass = 'transactional' | 'marketing';

export interface TemplateSummary {
  id: string;
  key: string;
  name: string;
  lifecycle: Lifecycle;
  activeVersionId: string | null;
  hasDraft: boolean;
  createdAt: string;
  updatedAt: string;
}
export interface Variable {
  key: string;
  type: VarType;
  required: boolean;
}
export interface Version {
  id: string;
  state: string;
  revision: number;
  number: number | null;
  name: string;
  subjectTemplate: string;
  htmlTemplate: string;
  textTemplate: string;
  variables: Variable[];
  sampleData: Record<string, unknown>;
  messageClass: MessageClass;
  publishedAt: string | null;
}
export interface Release {
  id: string;
  state: string;
  number: number;
  name: string;
  subjectTemplate: string;
  publishedAt: string;
}
export interface Detail {
  template: TemplateSummary;
  versions: Release[];
  draft: Version | null;
  activeVersion: Version | null;
  usage: Array<{ versionId: string; emails: number; lastSentAt: string | null }>;
}
export interface Finding {
  severity: 'error' | 'warning' | 'info';
  code: string;
  message: string;
  variable?: string;
}
export interface Rendered {
  subject: string;
  html: string;
  text: string;
  findings: Finding[];
  /** Findings past the 100 the box returns (errors are returned first). */
  findingsOmitted: number;
}

/** What the page's actions need from the editor: unsaved edits written first, and the sample data shown. */
export interface EditorHandle {
  flush(): Promise<boolean>;
  data(): Record<string, unknown>;
  errors(): number;
}
export type Handle = { current: EditorHandle | null };

export const TYPES: VarType[] = ['string', 'number', 'boolean', 'date', 'url', 'email'];
