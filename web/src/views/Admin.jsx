// For administrators: users (create, disable/enable), groups (create, members) and workflows
// (every version with its diagram and spec; a new spec uploaded or pasted, its refusals shown
// at the spec). The API lists no groups yet: the page lists those it created or opened by id.
import { useState } from 'react';

import { gql } from '../api/client.js';
import {
  ADD_MEMBER,
  CREATE_GROUP,
  CREATE_USER,
  DEFINE_WORKFLOW,
  DISABLE_USER,
  GROUP,
  REMOVE_MEMBER,
  USERS,
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
  const [groups, setGroups] = useState(() => people.groups.map((g) => ({ ...g, members: g.members ?? null })));
  const [values, setValues] = useState({ name: '', displayName: '' });
  const [create, creating] = useMutation(CREATE_GROUP, 'createGroup');
  const [lookup, setLookup] = useState('');
  const [lookupError, setLookupError] = useState(null);
  const known = groups.filter((g) => g.members);
  const put = (group) => setGroups((list) => [group, ...list.filter((g) => g.id !== group.id)]);

  async function open(id) {
    setLookupError(null);
    try {
      const { node } = await gql(GROUP, { id });
      if (node?.members) put(node);
      else setLookupError({ message: 'There is no group with that id.' });
    } catch (failure) {
      setLookupError(failure);
    }
  }

  return (
    <section aria-labelledby="groups-title">
      <h2 id="groups-title">Groups</h2>
      <form className="form" aria-label="New group"
        onSubmit={async (e) => {
          e.preventDefault();
          const payload = await create({ input: { name: values.name, displayName: values.displayName || null } });
          if (payload) {
            put(payload.group);
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
      <p className="hint">Groups met on this page (created here, holding a grant or a role) are listed below.</p>
      <div className="inline">
        {groups.filter((g) => !g.members).map((g) => (
          <button key={g.id} type="button" onClick={() => open(g.id)}>
            Open {g.displayName}
          </button>
        ))}
        <form className="inline" aria-label="Open a group by id" onSubmit={(e) => {
          e.preventDefault();
          if (lookup.trim()) open(lookup.trim());
        }}>
          <input aria-label="Group id" value={lookup} placeholder="grp_…" onChange={(e) => setLookup(e.target.value)} />
          <button type="submit">Open</button>
        </form>
      </div>
      <Failed error={lookupError} />
      <ul className="groups">
        {known.map((g) => (
          <GroupCard key={g.id} group={g} people={people} onChanged={put} />
        ))}
      </ul>
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

/** A spec's refusals, each with the line of the spec it points at. */
function Findings({ errors, text }) {
  if (!errors.length) return null;
  const lines = text.split('\n');
  return (
    <div role="alert">
      <ul className="findings" data-testid="findings">
        {errors.map((e) => {
          const at = e.field ? lineOf(text, e.field) : -1;
          return (
            <li key={e.code + e.message + (e.field || []).join('.')} data-code={e.code}>
              {e.message}
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

function Workflows() {
  const workflows = useWorkflows();
  const [shown, setShown] = useState(null);
  const [text, setText] = useState('');
  const [localErrors, setLocalErrors] = useState([]);
  const [define, defining] = useMutation(DEFINE_WORKFLOW, 'defineWorkflow');
  const [defined, setDefined] = useState(null);

  async function submit(e) {
    e.preventDefault();
    setDefined(null);
    let spec;
    try {
      // YAML, as the spec files are written (JSON is YAML too); the parser loads only here.
      const { parse } = await import('yaml');
      spec = parse(text, { maxAliasCount: 100 });
    } catch (failure) {
      setLocalErrors([{ code: 'INVALID_YAML', field: ['spec'], message: `The spec cannot be read: ${failure.message}` }]);
      return;
    }
    setLocalErrors([]);
    const payload = await define({ input: { spec } });
    if (payload) setDefined(payload.workflow);
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
      <form className="form" onSubmit={submit} aria-label="Define a workflow">
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
        <Findings errors={[...localErrors, ...defining.errors]} text={text} />
        {defined && (
          <p role="status" data-testid="defined">
            Defined {defined.shortName} v{defined.version}.
          </p>
        )}
        <div className="buttons">
          <button type="submit" className="primary" disabled={defining.busy}>
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
