// A template's variables with their sample data: each row a key, a type, required or not and a sample value in
// an input fit for its type; a renamed variable keeps its sample.
import { Icon } from '../../icons.tsx';
import type { Fields } from './draft.ts';
import { TYPES, type Variable, type VarType } from './model.ts';

export function Variables({ fields, editable, edit }: { fields: Fields; editable: boolean; edit: (p: Partial<Fields>) => void }) {
  const change = (i: number, patch: Partial<Variable>) => {
    const variables = fields.variables.map((v, j) => (j === i ? { ...v, ...patch } : v));
    const samples = { ...fields.samples };
    // A renamed variable keeps its sample value.
    if (patch.key !== undefined && fields.variables[i].key in samples) {
      samples[patch.key] = samples[fields.variables[i].key];
      delete samples[fields.variables[i].key];
    }
    edit({ variables, samples });
  };
  return (
    <section aria-label="Variables and sample data">
      <div class="row" style={{ justifyContent: 'space-between', marginBottom: '6px' }}>
        <h3 style={{ margin: 0 }}>Variables and sample data</h3>
        {editable && (
          <button class="button small" type="button" onClick={() => edit({ variables: [...fields.variables, { key: '', type: 'string', required: false }] })}>
            Add variable
          </button>
        )}
      </div>
      <p class="muted" style={{ margin: '0 0 8px', fontSize: '13px' }}>
        Sends must give every required variable. Sample values fill the preview and test sends, never real sends.
      </p>
      {fields.variables.length === 0 ? (
        <div class="muted" style={{ padding: '10px 0' }}>
          No variables yet. {editable ? 'Add one, then write {{its_key}} where the value goes.' : ''}
        </div>
      ) : (
        <div style={{ display: 'grid', gap: '8px' }}>
          {fields.variables.map((v, i) => (
            <div class="row variable" style={{ gap: '6px', padding: '8px', border: '1px solid var(--line)', borderRadius: '8px' }} data-variable={v.key}>
              <input class="mono" aria-label="Key" placeholder="key" value={v.key} disabled={!editable} style={{ flex: '1 1 130px', width: 'auto' }} onInput={(e) => change(i, { key: e.currentTarget.value })} />
              <select aria-label="Type" value={v.type} disabled={!editable} style={{ flex: '0 0 104px', width: 'auto' }} onChange={(e) => change(i, { type: e.currentTarget.value as VarType })}>
                {TYPES.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
              <label class="row" style={{ gap: '4px', flex: '0 0 auto', fontSize: '13px' }}>
                <input type="checkbox" checked={v.required} disabled={!editable} onChange={(e) => change(i, { required: e.currentTarget.checked })} />
                Required
              </label>
              <SampleInput variable={v} value={fields.samples[v.key] ?? ''} editable={editable} onInput={(value) => edit({ samples: { ...fields.samples, [v.key]: value } })} />
              {editable && (
                <button class="icon" type="button" aria-label={`Remove ${v.key || 'this variable'}`} title="Remove" onClick={() => edit({ variables: fields.variables.filter((_, j) => j !== i) })}>
                  <Icon name="close" />
                </button>
              )}
            </div>
          ))}
        </div>
      )}
    </section>
  );
}

function SampleInput({ variable: v, value, editable, onInput }: { variable: Variable; value: string; editable: boolean; onInput: (value: string) => void }) {
  const common = { 'aria-label': `Sample ${v.key}`, disabled: !editable || !v.key, style: { flex: '2 1 180px', width: 'auto' } };
  if (v.type === 'boolean')
    return (
      <select {...common} value={value} onChange={(e) => onInput(e.currentTarget.value)}>
        <option value="">no sample</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  const hint: Record<VarType, string> = { string: 'sample value', number: '42', boolean: '', date: '2026-11-25', url: 'https://…', email: 'name@example.com' };
  return <input {...common} type={v.type === 'number' ? 'number' : 'text'} inputMode={v.type === 'number' ? 'decimal' : v.type === 'url' ? 'url' : v.type === 'email' ? 'email' : undefined} placeholder={hint[v.type]} value={value} onInput={(e) => onInput(e.currentTarget.value)} />;
}
