// Running one enabled action: its inputs (the case fields it sets, outcome, resolution, comment,
// data, documents), then a
// dry run (executeAction with dryRun: true) that says where the case goes and what is enabled
// next, then the real run. Used from the item page and from a card dropped on a column.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { EXECUTE, WORKFLOW_FIELDS } from '../api/documents.js';
import { uploadFiles } from '../api/upload.js';
import { Dialog, Field, FieldErrors } from '../ui.jsx';
import { CaseFieldsForm, inputValue, sentValue } from './CaseFields.jsx';

const SHOWN = ['output', 'resolution', 'comment', 'data', 'documents', 'fields'];
const MAX_FILES = 10;

function jsonObject(text) {
  if (!text.trim()) return { value: null };
  try {
    const value = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return { value };
  } catch {
    // said below
  }
  return { error: { code: 'INVALID_INPUT', field: ['data'], message: 'Write a JSON object, like {"reason": "late"}.' } };
}

/** `enabled` is one of case.myActions; `states` maps a state short name to its pretty name;
 * `declared` is the workflow's fields, `current` the case's values (the form starts from them). */
export function ActionDialog({
  item,
  caseVersion,
  enabled,
  states = {},
  output: presetOutput = '',
  declared: given = null,
  workflowId = null,
  current = {},
  currency = null,
  onClose,
  onDone,
}) {
  const { action } = enabled;
  const [loaded, setLoaded] = useState(null);
  const declared = given ?? loaded ?? [];
  const editable = declared.filter((f) => (action.fields || []).includes(f.name));
  const [values, setValues] = useState({});
  // Without the declarations at hand (the task list, the board), they are read once, here.
  useEffect(() => {
    if (given || !workflowId || !(action.fields || []).length) return;
    gql(WORKFLOW_FIELDS, { id: workflowId }).then(({ node }) => setLoaded(node?.fields ?? []), () => setLoaded([]));
  }, [given, workflowId, action.fields]);
  const valueOf = (f) => (f.name in values ? values[f.name] : inputValue(f, current?.[f.name]));
  const [output, setOutput] = useState(presetOutput);
  const [resolution, setResolution] = useState('');
  const [comment, setComment] = useState('');
  const [data, setData] = useState('');
  const [files, setFiles] = useState([]);
  const [preview, setPreview] = useState(null);
  const [errors, setErrors] = useState([]);
  const [busy, setBusy] = useState(false);

  function input(dryRun) {
    const parsed = jsonObject(data);
    if (parsed.error) return { error: parsed.error };
    return {
      input: {
        workflowItemId: item.id,
        action: action.shortName,
        enabledActionId: enabled.id,
        expectedVersion: caseVersion,
        comment: comment || null,
        output: output || null,
        resolution: resolution || null,
        data: parsed.value,
        fields: editable.length
          ? Object.fromEntries(editable.map((f) => [f.name, sentValue(f, valueOf(f))]))
          : null,
        dryRun,
      },
    };
  }

  async function send(dryRun) {
    const built = input(dryRun);
    if (built.error) {
      setErrors([built.error]);
      return null;
    }
    setBusy(true);
    try {
      let result;
      if (!dryRun && files.length) {
        const variables = { input: { ...built.input, documents: files.map(() => null) } };
        const entries = files.map((f, i) => [`variables.input.documents.${i}`, f]);
        result = (await uploadFiles(EXECUTE, variables, entries)).executeAction;
      } else {
        result = (await gql(EXECUTE, { input: built.input })).executeAction;
      }
      setErrors(result.userErrors);
      return result.userErrors.length ? null : result;
    } catch (failure) {
      setErrors([{ code: failure.codes?.[0] || 'FAILED', message: failure.message, field: null }]);
      return null;
    } finally {
      setBusy(false);
    }
  }

  async function submit(event) {
    event.preventDefault();
    if (!preview) {
      const result = await send(true);
      if (result) setPreview(result.preview);
      return;
    }
    const result = await send(false);
    if (result) onDone(result);
  }

  const edit = (setter) => (e) => {
    setter(e.target.value);
    setPreview(null); // a changed input needs a new preview
  };
  const stateName = (s) => states[s.shortName] || s.prettyName;

  return (
    <Dialog title={`${action.prettyName}: ${item.displayName}`} onClose={onClose} testid="action-dialog">
      <form className="form action-form" onSubmit={submit} aria-label={action.prettyName} noValidate>
        <CaseFieldsForm action={action} declared={declared} values={Object.fromEntries(editable.map((f) => [f.name, valueOf(f)]))}
          errors={errors} currency={currency}
          setValue={(name, text) => {
            setValues((before) => ({ ...before, [name]: text }));
            setPreview(null);
          }} />
        {action.outputs.length > 0 && (
          <Field label="Outcome" name="output" errors={errors}>
            <select name="output" value={output} onChange={edit(setOutput)}>
              <option value="">Choose…</option>
              {action.outputs.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.name} → {states[o.newState] || o.newState}
                </option>
              ))}
            </select>
          </Field>
        )}
        {action.resolutions.length > 0 && (
          <Field label="Resolution" name="resolution" errors={errors}>
            <select name="resolution" value={resolution} onChange={edit(setResolution)}>
              <option value="">Choose…</option>
              {action.resolutions.map((r) => (
                <option key={r.code} value={r.code}>
                  {r.prettyName}
                </option>
              ))}
            </select>
          </Field>
        )}
        <Field label="Comment" name="comment" errors={errors}>
          <textarea name="comment" value={comment} maxLength={10000} onChange={edit(setComment)} />
        </Field>
        <details>
          <summary>Data and documents</summary>
          <Field label="Data" name="data" hint='A JSON object stored with the entry, like {"reason": "late"}' errors={errors}>
            <textarea name="data" value={data} rows={3} onChange={edit(setData)} />
          </Field>
          {(action.attachDocuments || item.allowedIntents?.includes('workflowItem.update')) && (
            <Field label="Documents" name="documents" hint={`At most ${MAX_FILES} files`} errors={errors}>
              <input type="file" name="documents" multiple
                onChange={(e) => {
                  setFiles([...e.target.files].slice(0, MAX_FILES));
                  setPreview(null);
                }} />
            </Field>
          )}
        </details>
        <FieldErrors errors={errors} field={null} shown={SHOWN} />
        {preview && (
          <div className="preview" role="status" data-testid="preview">
            <strong>If you go ahead:</strong> {item.displayName} will be <em>{stateName(preview.state)}</em>
            {preview.status !== 'ACTIVE' && ` (${preview.status.toLowerCase()})`}.
            {preview.enabledActions.length > 0
              ? ` Next: ${preview.enabledActions.map((a) => a.prettyName).join(', ')}.`
              : ' Nothing more can be done after that.'}
          </div>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Working…' : preview ? `Confirm ${action.prettyName}` : 'Preview'}
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
