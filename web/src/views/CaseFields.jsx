// Case fields (docs/workflows.md, "Fields and rules"): the inputs of the fields an action sets,
// built from the workflow's declarations (Workflow.fields), each with its errors under it
// (userErrors at ["fields", name]); and the fields of a case as the item page lists them (the
// server leaves out those its state hides from the viewer).
import { useId } from 'react';

/** The field's errors: userErrors whose field is ["fields", name]. */
function errorsOf(errors, name) {
  return (errors || []).filter((e) => e.field?.[0] === 'fields' && e.field?.[1] === name);
}

/** A stored value as its input shows it (an amount is {amount, currency}). */
export function inputValue(spec, value) {
  if (value === null || value === undefined) return spec.type === 'boolean' ? false : '';
  if (spec.type === 'money') return value.amount ?? '';
  if (spec.type === 'datetime') return String(value).slice(0, 16);
  return value;
}

/** What is sent for an input's text: null clears a field, numbers are numbers. */
export function sentValue(spec, text) {
  if (spec.type === 'boolean') return Boolean(text);
  if (text === '' || text === null || text === undefined) return null;
  if (spec.type === 'integer') return Number.isInteger(Number(text)) ? Number(text) : text;
  if (spec.type === 'number') return Number.isNaN(Number(text)) ? text : Number(text);
  if (spec.type === 'datetime') return new Date(text).toISOString();
  return text; // an amount goes as its decimal string
}

function Control({ spec, id, value, onChange, required, hintId }) {
  const common = { id, name: `fields.${spec.name}`, 'aria-describedby': hintId, required };
  switch (spec.type) {
    case 'text':
      return <textarea {...common} value={value} maxLength={spec.maxLength ?? undefined} onChange={(e) => onChange(e.target.value)} />;
    case 'boolean':
      return <input {...common} type="checkbox" checked={Boolean(value)} onChange={(e) => onChange(e.target.checked)} />;
    case 'enum':
      return (
        <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">Choose…</option>
          {spec.choices.map((c) => (
            <option key={c.code} value={c.code}>
              {c.label}
            </option>
          ))}
        </select>
      );
    case 'integer':
    case 'number':
    case 'money':
      return (
        <input {...common} type="number" inputMode="decimal" step={spec.type === 'integer' ? 1 : 'any'}
          min={spec.min ?? undefined} max={spec.max ?? undefined} value={value} onChange={(e) => onChange(e.target.value)} />
      );
    case 'date':
      return <input {...common} type="date" value={value} onChange={(e) => onChange(e.target.value)} />;
    case 'datetime':
      return <input {...common} type="datetime-local" value={value} onChange={(e) => onChange(e.target.value)} />;
    default:
      return (
        <input {...common} type="text" maxLength={spec.maxLength ?? undefined} value={value}
          onChange={(e) => onChange(e.target.value)} />
      );
  }
}

function FieldInput({ spec, value, required, errors, onChange, currency }) {
  const id = useId();
  const mine = errorsOf(errors, spec.name);
  const hint = [spec.help, spec.type === 'money' && currency ? `In ${currency}` : null].filter(Boolean).join(' · ');
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="field" data-field={spec.name}>
      <label htmlFor={id}>
        {spec.label}
        {required && (
          <span className="required" aria-hidden="true">
            {' '}*
          </span>
        )}
      </label>
      <Control spec={spec} id={id} value={value} onChange={onChange} required={required} hintId={hintId} />
      {hint && (
        <small id={hintId} className="hint">
          {hint}
        </small>
      )}
      {mine.length > 0 && (
        <div className="field-errors" role="alert">
          <ul>
            {mine.map((e) => (
              <li key={e.message} data-code={e.code}>
                {e.message}
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

/** The inputs of the fields `action` sets; `values` maps a name to its input's text. */
export function CaseFieldsForm({ action, declared = [], values, setValue, errors, currency }) {
  const editable = new Set(action.fields || []);
  const required = new Set(action.requiredFields || []);
  const specs = declared.filter((f) => editable.has(f.name));
  if (!specs.length) return null;
  return (
    <fieldset className="case-fields" data-testid="case-fields">
      <legend>Fields</legend>
      {specs.map((spec) => (
        <FieldInput key={spec.name} spec={spec} value={values[spec.name] ?? inputValue(spec, null)}
          required={required.has(spec.name) || spec.required} errors={errors} currency={currency}
          onChange={(text) => setValue(spec.name, text)} />
      ))}
    </fieldset>
  );
}

/** A stored value as the item page reads it. */
export function shown(spec, value) {
  if (value === null || value === undefined) return '—';
  if (spec?.type === 'money') return `${value.amount} ${value.currency ?? ''}`.trim();
  if (spec?.type === 'boolean') return value ? 'Yes' : 'No';
  if (spec?.type === 'enum') return spec.choices.find((c) => c.code === value)?.label ?? value;
  return String(value);
}

/** The case's fields the viewer may see, in the workflow's order. */
export function CaseFieldList({ declared = [], values = {} }) {
  const names = Object.keys(values || {});
  if (!names.length) return null;
  const byName = new Map(declared.map((f) => [f.name, f]));
  const ordered = [...declared.map((f) => f.name).filter((n) => n in values), ...names.filter((n) => !byName.has(n))];
  return (
    <dl className="case-fields" data-testid="case-fields">
      {ordered.map((name) => (
        <div key={name}>
          <dt>{byName.get(name)?.label ?? name}</dt>
          <dd data-field={name}>{shown(byName.get(name), values[name])}</dd>
        </div>
      ))}
    </dl>
  );
}
