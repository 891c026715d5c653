// For administrators: users (create, disable/enable), groups (find, create, members) and
// workflows (every version with its diagram and spec; a new spec uploaded or pasted, checked
// (validateWorkflow) or defined, its findings shown with the line of the spec each points at).
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import {
  ADD_MEMBER,
  CREATE_GROUP,
  CREATE_USER,
  DEFINE_WORKFLOW,
  DISABLE_USER,
  GROUPS,
  REMOVE_MEMBER,
  USERS,
  VALIDATE_WORKFLOW,
  WORKFLOW,
} from '../api/documents.js';
import { meetParties, reloadPeople, usePeople } from '../api/people.jsx';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Field, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { Diagram } from './Diagram.jsx';
import { useWorkflows } from './Forms.jsx';

function Users() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(USERS, { after: null }), []);
  const [values, setValues] = useState({ login: '', password: '', displayName: '', organization: '', admin: false });
  const [create, creating] = useMutation(CREATE_USER, 'createUser');
  const [disable, disabling] = useMutation(DISABLE_USER, 'disableUser');
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  async function submit(e) {
    e.preventDefault();
    const input = { ...values, displayName: values.displayName || null, organization: values.organization || null };
    if (await create({ input })) {
      setValues({ login: '', password: '', displayName: '', organization: '', admin: false });
      reload();
      reloadPeople().catch(() => {});
    }
  }
  const users = data ? data.users.edges.map((e) => e.node) : [];
  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">
        Users <small>{data?.users.totalCount}</small>
      </h2>
      {loading && !data && <Loading what="users" />}
      <Failed error={error} retry={reload} />
      <div className="scroll-x">
        <table className="list" data-testid="users">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Login</th>
              <th scope="col">Organization</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr key={u.id} data-login={u.login}>
                <td>{u.displayName}</td>
                <td>{u.login}</td>
                <td>{u.organization}</td>
                <td>
                  {u.admin && <span className="tag">admin</span>} {u.disabled ? 'disabled' : 'active'}{' '}
                  <button type="button" className="link"
                    onClick={async () => (await disable({ input: { userId: u.id, disabled: !u.disabled } })) && reload()}>
                    {u.disabled ? `Enable ${u.login}` : `Disable ${u.login}`}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {data?.users.pageInfo.hasNextPage && <p className="hint">The first 100 users are shown.</p>}
      <FieldErrors errors={disabling.errors} field={null} />
      <form className="form" onSubmit={submit} aria-label="New user">
        <h3>New user</h3>
        <div className="row">
          <Field label="Login" name="login" required errors={creating.errors} value={values.login}
            onChange={(e) => set('login', e.target.value)} />
          <Field label="Password" name="password" type="password" autoComplete="new-password" required
            errors={creating.errors} value={values.password} onChange={(e) => set('password', e.target.value)} />
        </div>
        <div className="row">
          <Field label="Full name" name="displayName" errors={creating.errors} value={values.displayName}
            onChange={(e) => set('displayName', e.target.value)} />
          <Field label="Organization" name="organization" errors={creating.errors} value={values.organization}
            onChange={(e) => set('organization', e.target.value)} />
        </div>
        <label className="check">
          <input type="checkbox" checked={values.admin} onChange={(e) => set('admin', e.target.checked)} /> Administrator
        </label>
        <FieldErrors errors={creating.errors} field={null} shown={['login', 'password', 'displayName', 'organization']} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={creating.busy}>
            Create user
          </button>
        </div>
      </form>
    </section>
  );
}

function GroupCard({ group, people, onChanged }) {
  const [member, setMember] = useState('');
  const [add, adding] = useMutation(ADD_MEMBER, 'addGroupMember');
  const [remove, removing] = useMutation(REMOVE_MEMBER, 'removeGroupMember');
  return (
    <li className="group" data-testid="group">
      <h3>
        {group.displayName} <small>{group.name}</small>
      </h3>
      {group.members.length === 0 && <Empty>No members.</Empty>}
      <ul>
        {group.members.map((m) => (
          <li key={m.id}>
            {m.displayName}{' '}
            <button type="button" className="link" aria-label={`Remove ${m.displayName} from ${group.displayName}`}
              onClick={async () => {
                const payload = await remove({ input: { groupId: group.id, userId: m.id } });
                if (payload) onChanged({ ...group, members: payload.group.members });
              }}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form className="inline" aria-label={`Add a member to ${group.displayName}`}
        onSubmit={async (e) => {
          e.preventDefault();
          const payload = await add({ input: { groupId: group.id, userId: member } });
          if (payload) {
            setMember('');
            onChanged({ ...group, members: payload.group.members });
          }
        }}>
        <select aria-label={`New member of ${group.displayName}`} value={member} onChange={(e) => setMember(e.target.value)} required>
          <option value="">Choose…</option>
          {people.users.map((u) => (
            <option key={u.id} value={u.id}>
              {u.displayName}
            </option>
          ))}
        </select>
        <button type="submit" disabled={!member || adding.busy}>
          Add
        </button>
      </form>
      <FieldErrors errors={[...adding.errors, ...removing.errors]} field={null} />
    </li>
  );
}

function Groups() {
  const people = usePeople();
  const [search, setSearch] = useState('');
  const [sent, setSent] = useState('');
  const [{ loading, error, data }, reload] = useLoad(() => gql(GROUPS, { after: null, search: sent || null }), [sent]);
  const [changed, setChanged] = useState({}); // id → the group as a mutation last answered
  const [made, setMade] = useState([]);
  const [values, setValues] = useState({ name: '', displayName: '' });
  const [create, creating] = useMutation(CREATE_GROUP, 'createGroup');
  useEffect(() => {
    const timer = setTimeout(() => setSent(search.trim()), 250);
    return () => clearTimeout(timer);
  }, [search]);
  const listed = data ? data.groups.edges.map((e) => e.node) : [];
  const groups = [...made.filter((g) => !listed.some((l) => l.id === g.id)), ...listed].map((g) => changed[g.id] ?? g);
  const put = (group) => setChanged((c) => ({ ...c, [group.id]: group }));

  return (
    <section aria-labelledby="groups-title">
      <h2 id="groups-title">Groups</h2>
      <form className="form" aria-label="New group"
        onSubmit={async (e) => {
          e.preventDefault();
          const payload = await create({ input: { name: values.name, displayName: values.displayName || null } });
          if (payload) {
            setMade((list) => [payload.group, ...list]);
            meetParties([{ ...payload.group, __typename: 'Group' }]);
            setValues({ name: '', displayName: '' });
          }
        }}>
        <div className="row">
          <Field label="Group name" name="name" required errors={creating.errors} value={values.name}
            onChange={(e) => setValues({ ...values, name: e.target.value })} />
          <Field label="Display name" name="displayName" errors={creating.errors} value={values.displayName}
            onChange={(e) => setValues({ ...values, displayName: e.target.value })} />
        </div>
        <FieldErrors errors={creating.errors} field={null} shown={['name', 'displayName']} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={creating.busy}>
            Create group
          </button>
        </div>
      </form>
      <form className="filters" role="search" aria-label="Find groups" onSubmit={(e) => e.preventDefault()}>
        <label>
          Find a group
          <input type="search" maxLength={200} value={search} onChange={(e) => setSearch(e.target.value)} />
        </label>
      </form>
      {loading && !data && <Loading what="groups" />}
      <Failed error={error} retry={reload} />
      {data && groups.length === 0 && <Empty>{sent ? 'No group matches.' : 'There are no groups yet.'}</Empty>}
      <ul className="groups">
        {groups.map((g) => (
          <GroupCard key={g.id} group={g} people={people} onChanged={put} />
        ))}
      </ul>
      {data?.groups.pageInfo.hasNextPage && <p className="hint">The first 100 groups are shown: narrow them down.</p>}
    </section>
  );
}

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

function Workflows() {
  const workflows = useWorkflows();
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
        if (payload.workflow) setOutcome(`Defined ${payload.workflow.shortName} v${payload.workflow.version}.`);
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

export function Admin({ tab = 'users' }) {
  const tabs = [
    ['users', 'Users'],
    ['groups', 'Groups'],
    ['workflows', 'Workflows'],
  ];
  return (
    <section className="admin">
      <h1>Administration</h1>
      <nav className="tabs" aria-label="Administration">
        {tabs.map(([key, label]) => (
          <a key={key} href={`#/admin/${key}`} aria-current={tab === key ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {tab === 'users' && <Users />}
      {tab === 'groups' && <Groups />}
      {tab === 'workflows' && <Workflows />}
    </section>
  );
}
