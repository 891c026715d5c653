// Creating and editing projects, subprojects and workflow items: one dialog each, the same for
// create and edit (an edit sends only what changed). Refusals show at their field.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import {
  CREATE_ITEM,
  CREATE_PROJECT,
  CREATE_SUBPROJECT,
  UPDATE_ITEM,
  UPDATE_PROJECT,
  UPDATE_SUBPROJECT,
  WORKFLOWS,
} from '../api/documents.js';
import { PartyOptions, usePeople } from '../api/people.jsx';
import { Dialog, Field, FieldErrors, useMutation } from '../ui.jsx';

const tagList = (text) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

/** The JSON object typed in a textarea, or an error naming the field. */
function parseJson(text, field) {
  if (!text.trim()) return { value: null };
  try {
    const value = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    return { value };
  } catch {
    return { error: { code: 'INVALID_INPUT', field: [field], message: 'Write a JSON object, like {"po": "4711"}.' } };
  }
}

/** Only the fields that differ from `before` (an edit), or all that are set (a create). */
function changes(values, before) {
  const out = {};
  for (const [key, value] of Object.entries(values)) {
    if (!before) {
      if (value !== '' && value !== null && !(Array.isArray(value) && !value.length)) out[key] = value;
    } else if (JSON.stringify(value ?? null) !== JSON.stringify(before[key] ?? null)) {
      out[key] = value;
    }
  }
  return out;
}

function Buttons({ busy, label, onClose }) {
  return (
    <div className="buttons">
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Saving…' : label}
      </button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
    </div>
  );
}

function CommonFields({ values, set, errors }) {
  return (
    <>
      <Field label="Name" name="displayName" errors={errors} value={values.displayName} required maxLength={200}
        onChange={(e) => set('displayName', e.target.value)} />
      <Field label="Description" name="description" errors={errors}>
        <textarea name="description" value={values.description} maxLength={10000}
          onChange={(e) => set('description', e.target.value)} />
      </Field>
      <Field label="Tags" name="tags" hint="Separated by commas" errors={errors} value={values.tags}
        onChange={(e) => set('tags', e.target.value)} />
    </>
  );
}

/** Create a project (`project` null) or edit one. */
export function ProjectForm({ project, onClose, onSaved }) {
  const [values, setValues] = useState({
    displayName: project?.displayName ?? '',
    description: project?.description ?? '',
    tags: (project?.tags ?? []).join(', '),
  });
  const [run, { busy, errors }] = useMutation(project ? UPDATE_PROJECT : CREATE_PROJECT, project ? 'updateProject' : 'createProject');
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  async function submit(e) {
    e.preventDefault();
    const fields = { displayName: values.displayName, description: values.description, tags: tagList(values.tags) };
    const input = project ? { id: project.id, ...changes(fields, project) } : changes(fields, null);
    const payload = await run({ input });
    if (payload) onSaved(payload.project);
  }
  return (
    <Dialog title={project ? `Edit ${project.displayName}` : 'New project'} onClose={onClose}>
      <form onSubmit={submit} className="form" aria-label={project ? 'Edit project' : 'New project'}>
        <CommonFields values={values} set={set} errors={errors} />
        <FieldErrors errors={errors} field={null} shown={['displayName', 'description', 'tags']} />
        <Buttons busy={busy} label={project ? 'Save' : 'Create project'} onClose={onClose} />
      </form>
    </Dialog>
  );
}

/** Every version of every workflow (a new subproject takes the newest unless told another). */
/** Every workflow version; read again whenever `version` changes (a workflow was defined), the
 * list read before staying meanwhile. */
export function useWorkflows(version = 0) {
  const [list, setList] = useState(null);
  useEffect(() => {
    let live = true;
    (async () => {
      const all = [];
      let after = null;
      for (let page = 0; page < 10; page += 1) {
        const { workflows } = await gql(WORKFLOWS, { after });
        all.push(...workflows.edges.map((e) => e.node));
        if (!workflows.pageInfo.hasNextPage) break;
        after = workflows.pageInfo.endCursor;
      }
      if (live) setList(all);
    })().catch(() => live && setList([]));
    return () => {
      live = false;
    };
  }, [version]);
  return list;
}

/** Create a subproject in `projectId` (`subproject` null) or edit one. */
export function SubprojectForm({ projectId, subproject, onClose, onSaved }) {
  const people = usePeople();
  const workflows = useWorkflows();
  const [values, setValues] = useState({
    displayName: subproject?.displayName ?? '',
    description: subproject?.description ?? '',
    tags: (subproject?.tags ?? []).join(', '),
    currency: 'EUR',
    workflow: 'approval',
    workflowVersion: '',
    workflowMode: 'UNORDERED',
    assigneeId: '',
    validatorId: '',
  });
  const editing = Boolean(subproject);
  const [run, { busy, errors }] = useMutation(
    editing ? UPDATE_SUBPROJECT : CREATE_SUBPROJECT,
    editing ? 'updateSubproject' : 'createSubproject',
  );
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  const latest = new Map();
  for (const wf of workflows || []) {
    if (!latest.has(wf.shortName) || latest.get(wf.shortName).version < wf.version) latest.set(wf.shortName, wf);
  }
  const versions = (workflows || []).filter((wf) => wf.shortName === values.workflow);
  const chosen = latest.get(values.workflow);
  const shown = versions.find((wf) => String(wf.version) === values.workflowVersion) ?? chosen;

  async function submit(e) {
    e.preventDefault();
    const common = { displayName: values.displayName, description: values.description, tags: tagList(values.tags) };
    let input;
    if (editing) input = { id: subproject.id, ...changes(common, subproject) };
    else {
      input = {
        projectId,
        ...changes(
          { ...common, currency: values.currency, workflow: values.workflow,
            workflowVersion: values.workflowVersion ? Number(values.workflowVersion) : null,
            workflowMode: values.workflowMode,
            assigneeId: values.assigneeId || null, validatorId: values.validatorId || null },
          null,
        ),
      };
    }
    const payload = await run({ input });
    if (payload) onSaved(payload.subproject);
  }

  return (
    <Dialog title={editing ? `Edit ${subproject.displayName}` : 'New subproject'} onClose={onClose}>
      <form onSubmit={submit} className="form" aria-label={editing ? 'Edit subproject' : 'New subproject'}>
        <CommonFields values={values} set={set} errors={errors} />
        {!editing && (
          <>
            <Field label="Currency" name="currency" errors={errors} value={values.currency} required maxLength={3}
              pattern="[A-Z]{3}" hint="Three capital letters, like EUR"
              onChange={(e) => set('currency', e.target.value.toUpperCase())} />
            <Field label="Workflow" name="workflow" errors={errors}>
              <select name="workflow" value={values.workflow}
                onChange={(e) => setValues((v) => ({ ...v, workflow: e.target.value, workflowVersion: '' }))}>
                {[...latest.values()].map((wf) => (
                  <option key={wf.shortName} value={wf.shortName}>
                    {wf.prettyName}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Version" name="workflowVersion" errors={errors}
              hint="Its new items take this version; cases already running keep theirs.">
              <select name="workflowVersion" value={values.workflowVersion} disabled={versions.length < 2}
                onChange={(e) => set('workflowVersion', e.target.value)}>
                <option value="">{chosen ? `v${chosen.version} (newest)` : 'Newest'}</option>
                {versions
                  .filter((wf) => wf !== chosen)
                  .sort((a, b) => b.version - a.version)
                  .map((wf) => (
                    <option key={wf.id} value={wf.version}>
                      v{wf.version}
                    </option>
                  ))}
              </select>
            </Field>
            {shown && (
              <p className="hint" data-testid="workflow-states">
                States: {shown.states.map((s) => s.prettyName).join(' → ')}
              </p>
            )}
            <Field label="Order" name="workflowMode" errors={errors}>
              <select name="workflowMode" value={values.workflowMode} onChange={(e) => set('workflowMode', e.target.value)}>
                <option value="UNORDERED">Items in any order</option>
                <option value="ORDERED">Items one after another</option>
              </select>
            </Field>
            <Field label="Assignee" name="assigneeId" errors={errors}>
              <select name="assigneeId" value={values.assigneeId} onChange={(e) => set('assigneeId', e.target.value)}>
                <option value="">Me</option>
                <PartyOptions people={people} />
              </select>
            </Field>
            <Field label="Validator" name="validatorId" errors={errors}>
              <select name="validatorId" value={values.validatorId} onChange={(e) => set('validatorId', e.target.value)}>
                <option value="">None</option>
                <PartyOptions people={people} />
              </select>
            </Field>
          </>
        )}
        <FieldErrors errors={errors} field={null}
          shown={['displayName', 'description', 'tags', 'currency', 'workflow', 'workflowVersion', 'workflowMode',
            'assigneeId', 'validatorId']} />
        <Buttons busy={busy} label={editing ? 'Save' : 'Create subproject'} onClose={onClose} />
      </form>
    </Dialog>
  );
}

const ITEM_FIELDS = ['displayName', 'description', 'assigneeId', 'dueDate', 'amountType', 'amount', 'currency',
  'exchangeRate', 'billingDate', 'tags', 'additionalData', 'assignments'];

/** Create an item in `subproject` (`item` null: every field of createWorkflowItem, and who plays
 * each role) or edit one (updateWorkflowItem's fields). */
export function ItemForm({ subproject, item, onClose, onSaved }) {
  const people = usePeople();
  const editing = Boolean(item);
  const [values, setValues] = useState({
    displayName: item?.displayName ?? '',
    description: item?.description ?? '',
    tags: (item?.tags ?? []).join(', '),
    assigneeId: '',
    dueDate: item?.dueDate ?? '',
    amountType: item?.amountType ?? 'N/A',
    amount: item?.amount ?? '',
    currency: item?.currency ?? '',
    exchangeRate: item?.exchangeRate ?? '',
    billingDate: item?.billingDate ?? '',
    additionalData: item && Object.keys(item.additionalData || {}).length ? JSON.stringify(item.additionalData, null, 2) : '',
    roles: {},
  });
  const [local, setLocal] = useState([]);
  const [run, { busy, errors }] = useMutation(editing ? UPDATE_ITEM : CREATE_ITEM, editing ? 'updateWorkflowItem' : 'createWorkflowItem');
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  const roles = subproject?.workflow?.roles ?? [];
  const shown = [...errors, ...local];

  async function submit(e) {
    e.preventDefault();
    const data = parseJson(values.additionalData, 'additionalData');
    if (data.error) {
      setLocal([data.error]);
      return;
    }
    setLocal([]);
    const fields = {
      displayName: values.displayName,
      description: values.description,
      tags: tagList(values.tags),
      dueDate: values.dueDate || null,
      amountType: values.amountType,
      amount: values.amount || null,
      currency: values.currency || null,
      exchangeRate: values.exchangeRate || null,
      billingDate: values.billingDate || null,
      additionalData: data.value,
    };
    let input;
    if (editing) {
      input = { id: item.id, ...changes(fields, { ...item, additionalData: Object.keys(item.additionalData || {}).length ? item.additionalData : null }) };
    } else {
      const assignments = Object.entries(values.roles)
        .filter(([, ids]) => ids.length)
        .map(([role, partyIds]) => ({ role, partyIds }));
      input = {
        subprojectId: subproject.id,
        ...changes({ ...fields, amountType: values.amountType, assigneeId: values.assigneeId || null, assignments }, null),
      };
    }
    const payload = await run({ input });
    if (payload) onSaved(payload.workflowItem);
  }

  return (
    <Dialog title={editing ? `Edit ${item.displayName}` : 'New item'} onClose={onClose}>
      <form onSubmit={submit} className="form" aria-label={editing ? 'Edit item' : 'New item'}>
        <CommonFields values={values} set={set} errors={shown} />
        {!editing && (
          <Field label="Assignee" name="assigneeId" errors={shown}>
            <select name="assigneeId" value={values.assigneeId} onChange={(e) => set('assigneeId', e.target.value)}>
              <option value="">Me</option>
              <PartyOptions people={people} />
            </select>
          </Field>
        )}
        <div className="row">
          <Field label="Due date" name="dueDate" type="date" errors={shown} value={values.dueDate}
            onChange={(e) => set('dueDate', e.target.value)} />
          <Field label="Billing date" name="billingDate" type="date" errors={shown} value={values.billingDate}
            onChange={(e) => set('billingDate', e.target.value)} />
        </div>
        <div className="row">
          <Field label="Amount type" name="amountType" errors={shown}>
            <select name="amountType" value={values.amountType} onChange={(e) => set('amountType', e.target.value)}>
              <option value="N/A">No amount</option>
              <option value="ALLOCATED">Allocated</option>
              <option value="DISBURSED">Disbursed</option>
            </select>
          </Field>
          <Field label="Amount" name="amount" inputMode="decimal" errors={shown} value={values.amount}
            onChange={(e) => set('amount', e.target.value)} />
        </div>
        <div className="row">
          <Field label="Item currency" name="currency" maxLength={3} errors={shown} value={values.currency}
            hint={`Empty: the subproject's (${subproject?.currency ?? '—'})`}
            onChange={(e) => set('currency', e.target.value.toUpperCase())} />
          <Field label="Exchange rate" name="exchangeRate" inputMode="decimal" errors={shown} value={values.exchangeRate}
            onChange={(e) => set('exchangeRate', e.target.value)} />
        </div>
        <Field label="Additional data" name="additionalData" hint='A JSON object, like {"po": "4711"}' errors={shown}>
          <textarea name="additionalData" value={values.additionalData} rows={3}
            onChange={(e) => set('additionalData', e.target.value)} />
        </Field>
        {!editing && roles.length > 0 && (
          <fieldset className="roles-pick">
            <legend>Who plays each role (empty: the workflow's default)</legend>
            {roles.map((role) => (
              <Field key={role.shortName} label={role.prettyName} name={`role-${role.shortName}`}>
                <select multiple name={`role-${role.shortName}`} size={3}
                  value={values.roles[role.shortName] ?? []}
                  onChange={(e) =>
                    set('roles', { ...values.roles, [role.shortName]: [...e.target.selectedOptions].map((o) => o.value) })
                  }>
                  <PartyOptions people={people} />
                </select>
              </Field>
            ))}
            <FieldErrors errors={shown} field="assignments" />
          </fieldset>
        )}
        <FieldErrors errors={shown} field={null} shown={ITEM_FIELDS} />
        <Buttons busy={busy} label={editing ? 'Save' : 'Create item'} onClose={onClose} />
      </form>
    </Dialog>
  );
}
