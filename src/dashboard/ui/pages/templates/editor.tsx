// The template editor: name, message class, subject, HTML and text, the variables with their sample data
// (variables.tsx), saved as you type (draft.ts), beside the box's preview of it (preview.tsx).
import { Field } from '../../components/forms.tsx';
import { useDraft } from './draft.ts';
import type { Handle, MessageClass, Version } from './model.ts';
import { Preview } from './preview.tsx';
import { Variables } from './variables.tsx';

export function Editor({ templateId, version, editable, handle, onReload }: { templateId: string; version: Version; editable: boolean; handle: Handle; onReload: () => void }) {
  const { fields, edit, save, revision, preview, render, overwrite } = useDraft(templateId, version, editable, handle);
  const status =
    save.state === 'saving' ? 'Saving…' : save.state === 'pending' ? 'Unsaved changes' : save.state === 'saved' ? (editable ? `Saved · revision ${revision}` : 'Read only') : null;

  return (
    <div class="split" style={{ alignItems: 'start' }}>
      <div class="card" style={{ display: 'grid', gap: '14px', minWidth: 0 }}>
        <div class="row" style={{ justifyContent: 'space-between' }}>
          <h2 style={{ margin: 0 }}>{editable ? 'Draft' : `Release v${version.number}`}</h2>
          {status && (
            <span class="muted" role="status" aria-live="polite" data-testid="save-status">
              {save.state === 'saving' && <span class="spinner" aria-hidden="true" />} {status}
            </span>
          )}
        </div>
        {save.state === 'conflict' && (
          <div class="state error" role="alert" style={{ padding: '12px', justifyItems: 'start', textAlign: 'left' }}>
            <strong>Someone else changed this draft.</strong>
            <span>{save.message}. Your edits here are not saved.</span>
            <div class="row">
              <button class="button small primary" onClick={onReload}>
                Load their version
              </button>
              <button class="button small" onClick={overwrite}>
                Save mine over it
              </button>
            </div>
          </div>
        )}
        {save.state === 'error' && (
          <p class="form-error" role="alert">
            Not saved: {save.message}. The preview shows the last saved draft.
          </p>
        )}
        <div class="row" style={{ alignItems: 'flex-start' }}>
          <div style={{ flex: '2 1 220px' }}>
            <Field label="Name">
              <input name="name" value={fields.name} disabled={!editable} maxLength={200} onInput={(e) => edit({ name: e.currentTarget.value })} />
            </Field>
          </div>
          <div style={{ flex: '1 1 150px' }}>
            <Field label="Message class">
              <select value={fields.messageClass} disabled={!editable} onChange={(e) => edit({ messageClass: e.currentTarget.value as MessageClass })}>
                <option value="transactional">Transactional</option>
                <option value="marketing">Marketing</option>
              </select>
            </Field>
          </div>
        </div>
        <Field label="Subject" hint="{{variable_key}} puts a value in; it is the same in HTML, text and subject.">
          <input class="mono" name="subject" value={fields.subjectTemplate} disabled={!editable} maxLength={2000} spellcheck={false} onInput={(e) => edit({ subjectTemplate: e.currentTarget.value })} />
        </Field>
        <Field label="HTML">
          <textarea class="mono" name="html" rows={16} wrap="off" spellcheck={false} value={fields.htmlTemplate} disabled={!editable} onInput={(e) => edit({ htmlTemplate: e.currentTarget.value })} />
        </Field>
        <Field label="Text" hint="The plain part, for clients that do not show HTML and for spam filters.">
          <textarea class="mono" name="text" rows={8} spellcheck={false} value={fields.textTemplate} disabled={!editable} onInput={(e) => edit({ textTemplate: e.currentTarget.value })} />
        </Field>
        <Variables fields={fields} editable={editable} edit={edit} />
      </div>
      <Preview preview={preview} retry={render} />
    </div>
  );
}
