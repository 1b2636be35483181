-- Hosted templates (API-SPEC.md section 2): a template, its one draft and its numbered releases. A release
-- is immutable in the store itself (the trigger), not only by the routes that never update one.
CREATE TABLE templates (
  id                TEXT PRIMARY KEY,
  workspace_id      TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  key               TEXT NOT NULL,
  name              TEXT NOT NULL,
  lifecycle         TEXT NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active', 'archived')),
  active_version_id TEXT,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
);
CREATE UNIQUE INDEX templates_key ON templates(workspace_id, key COLLATE NOCASE);

CREATE TABLE template_versions (
  id               TEXT PRIMARY KEY,
  template_id      TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
  workspace_id     TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('draft', 'published')),
  revision         INTEGER NOT NULL DEFAULT 1,
  number           INTEGER,                     -- releases are numbered 1, 2, ... when published
  name             TEXT NOT NULL,
  subject_template TEXT NOT NULL,
  html_template    TEXT NOT NULL,
  text_template    TEXT NOT NULL,
  variables_json   TEXT NOT NULL,
  sample_data_json TEXT NOT NULL,
  message_class    TEXT NOT NULL CHECK (message_class IN ('transactional', 'marketing')),
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  published_at     INTEGER
);
CREATE UNIQUE INDEX template_versions_draft ON template_versions(template_id) WHERE state = 'draft';
CREATE UNIQUE INDEX template_versions_number ON template_versions(template_id, number) WHERE number IS NOT NULL;

CREATE TRIGGER template_release_immutable BEFORE UPDATE ON template_versions WHEN OLD.state = 'published'
BEGIN
  SELECT RAISE(ABORT, 'a published template version is immutable');
END;
-- A release goes only with its template (a workspace's deletion cascades through both).
CREATE TRIGGER template_release_kept BEFORE DELETE ON template_versions
  WHEN OLD.state = 'published' AND EXISTS (SELECT 1 FROM templates WHERE id = OLD.template_id)
BEGIN
  SELECT RAISE(ABORT, 'a published template version cannot be deleted');
END;

-- Which release (or, for a test send, which draft) an email was rendered from; usage counts by it.
ALTER TABLE emails ADD COLUMN template_version_id TEXT;
CREATE INDEX emails_template_version ON emails(template_version_id, created_at) WHERE template_version_id IS NOT NULL;
