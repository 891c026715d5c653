// The administrator's workflows: every version with its diagram and spec, and a new spec
// uploaded or pasted (YAML or JSON), checked (validateWorkflow) or defined (then listed at once),
// its findings shown with the line of the spec each points at.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { DEFINE_WORKFLOW, VALIDATE_WORKFLOW, WORKFLOW } from '../api/documents.js';
import { useLoad } from '../hooks.js';
import { Failed, Field, Loading } from '../ui.jsx';
import { Diagram } from './Diagram.jsx';
import { useWorkflows } from './Forms.jsx';

function WorkflowDetail({ id }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(WORKFLOW, { id }), [id]);
  if (!data) return loading ? <Loading what="the workflow" /> : <Failed error={error} retry={reload} />;
  const wf = data.node;
  return (
    <div className="workflow-detail" data-testid="workflow-detail">
      <h3>
        {wf.prettyName} <small>v{wf.version}</small>
      </h3>
      <Diagram source={wf.diagram} />
      <details>
        <summary>Spec</summary>
        <pre className="spec" tabIndex={0}>{JSON.stringify(wf.spec, null, 2)}</pre>
      </details>
    </div>
  );
}

/** The line of `text` (YAML or JSON) where a userError's field path below `spec` points: each
 * key looked for after the line of the one before it; -1 when a key is not found. */
export function lineOf(text, path) {
  const lines = text.split('\n');
  let at = -1;
  for (const key of path.filter((k, i) => !(i === 0 && k === 'spec'))) {
    if (/^\d+$/.test(String(key))) continue; // a list index: the list's line is near enough
    const pattern = new RegExp(`^\\s*(- )?["']?${String(key).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`);
    const next = lines.findIndex((line, i) => i > at && pattern.test(line));
    if (next < 0) break;
    at = next;
  }
  return at;
}

/** The findings of a spec (validateWorkflow's or defineWorkflow's diagnostics; a refusal
 * without one, as a userError), errors first, each with the line of the spec it points at. */
function Findings({ findings, text }) {
  if (!findings.length) return null;
  const lines = text.split('\n');
  const ordered = [...findings].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'ERROR' ? -1 : 1));
  return (
    <div role="alert">
      <ul className="findings" data-testid="findings">
        {ordered.map((f) => {
          const at = f.path.length ? lineOf(text, f.path) : -1;
          return (
            <li key={f.code + f.message + f.path.join('.')} data-code={f.code} data-severity={f.severity}
              className={f.severity === 'WARNING' ? 'warning' : undefined}>
              <strong>{f.severity === 'WARNING' ? 'Warning' : 'Error'}:</strong> {f.message}
              {f.hint && <> {f.hint}</>}
              {at >= 0 && (
                <small>
                  {' '}
                  (line {at + 1}: <code>{lines[at].trim()}</code>)
                </small>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** A payload's findings: its diagnostics, else its userErrors as errors at their field. */
function findingsOf(payload) {
  if (payload.diagnostics?.length) return payload.diagnostics;
  return (payload.userErrors || []).map((e) => ({
    code: e.code,
    severity: 'ERROR',
    path: (e.field || []).filter((k, i) => !(i === 0 && (k === 'spec' || k === 'input'))),
    message: e.message,
    hint: null,
  }));
}

export function Workflows() {
  const [defined, setDefined] = useState(0); // how many were defined here: the list follows
  const workflows = useWorkflows(defined);
  const [shown, setShown] = useState(null);
  const [text, setText] = useState('');
  const [findings, setFindings] = useState([]);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState(null);

  async function send(define) {
    setOutcome(null);
    let spec;
    try {
      // YAML, as the spec files are written (JSON is YAML too); the parser loads only here.
      const { parse } = await import('yaml');
      spec = parse(text, { maxAliasCount: 100 });
    } catch (failure) {
      setFindings([{ code: 'INVALID_YAML', severity: 'ERROR', path: [], message: `The spec cannot be read: ${failure.message}` }]);
      return;
    }
    setBusy(true);
    try {
      if (define) {
        const { defineWorkflow: payload } = await gql(DEFINE_WORKFLOW, { input: { spec } });
        setFindings(payload.workflow ? payload.diagnostics : findingsOf(payload));
        if (payload.workflow) {
          setOutcome(`Defined ${payload.workflow.shortName} v${payload.workflow.version}.`);
          setDefined((n) => n + 1);
        }
      } else {
        const { validateWorkflow: payload } = await gql(VALIDATE_WORKFLOW, { spec });
        const found = findingsOf(payload);
        setFindings(found);
        if (!found.some((f) => f.severity === 'ERROR')) setOutcome('No errors: it can be defined.');
      }
    } catch (failure) {
      setFindings([{ code: failure.codes?.[0] || 'FAILED', severity: 'ERROR', path: [], message: failure.message }]);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="workflows-title">
      <h2 id="workflows-title">Workflows</h2>
      {!workflows && <Loading what="workflows" />}
      <div className="scroll-x">
        <table className="list" data-testid="workflows">
          <thead>
            <tr>
              <th scope="col">Workflow</th>
              <th scope="col">Version</th>
              <th scope="col">States</th>
              <th scope="col">
                <span className="visually-hidden">Show</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(workflows || []).map((wf) => (
              <tr key={wf.id}>
                <td>
                  {wf.prettyName} <small>{wf.shortName}</small>
                </td>
                <td>v{wf.version}</td>
                <td>{wf.states.map((s) => s.prettyName).join(', ')}</td>
                <td>
                  <button type="button" className="link" onClick={() => setShown(wf.id)}
                    aria-label={`Show ${wf.prettyName} v${wf.version}`}>
                    Show
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {shown && <WorkflowDetail id={shown} />}
      <form className="form" onSubmit={(e) => {
        e.preventDefault();
        send(true);
      }} aria-label="Define a workflow">
        <h3>Define a workflow (a new one, or a new version of one)</h3>
        <Field label="Spec file (YAML or JSON)" name="specFile">
          <input type="file" name="specFile" accept=".yaml,.yml,.json"
            onChange={async (e) => {
              const file = e.target.files[0];
              if (file) setText(await file.text());
            }} />
        </Field>
        <Field label="Spec" name="spec" hint="YAML or JSON: roles, states and actions, each keyed by short name (docs/workflows.md)">
          <textarea name="spec" rows={12} className="code" value={text} onChange={(e) => setText(e.target.value)} required />
        </Field>
        <Findings findings={findings} text={text} />
        <p role="status" data-testid="defined">
          {outcome}
        </p>
        <div className="buttons">
          <button type="button" disabled={busy} onClick={() => send(false)}>
            Check
          </button>
          <button type="submit" className="primary" disabled={busy}>
            Define
          </button>
        </div>
      </form>
    </section>
  );
}

