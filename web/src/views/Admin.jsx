// For administrators: users (create, disable/enable, edit: AdminUser.jsx, their API tokens:
// AdminTokens.jsx), groups (find, create, members) and workflows (AdminWorkflows.jsx).
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import {
  ADD_MEMBER,
  ADMIN_USERS,
  CREATE_GROUP,
  CREATE_USER,
  DISABLE_USER,
  GROUPS,
  REMOVE_MEMBER,
} from '../api/documents.js';
import { meetParties, reloadPeople, usePeople } from '../api/people.jsx';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Field, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { FailedJobs } from './AdminJobs.jsx';
import { ApiTokens } from './AdminTokens.jsx';
import { UserEditor } from './AdminUser.jsx';
import { Workflows } from './AdminWorkflows.jsx';

function Users() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(ADMIN_USERS, { after: null }), []);
  const blank = { login: '', password: '', displayName: '', organization: '', admin: false, service: false };
  const [values, setValues] = useState(blank);
  const [tokensOf, setTokensOf] = useState(null); // the user whose API tokens are shown
  const [editing, setEditing] = useState(null); // the id of the user whose Edit panel is open
  const [create, creating] = useMutation(CREATE_USER, 'createUser');
  const [disable, disabling] = useMutation(DISABLE_USER, 'disableUser');
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  async function submit(e) {
    e.preventDefault();
    const { service, ...rest } = values;
    const input = {
      ...rest,
      password: service ? null : values.password,
      kind: service ? 'SERVICE' : 'PERSON',
      displayName: values.displayName || null,
      organization: values.organization || null,
    };
    if (await create({ input })) {
      setValues(blank);
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
                  {u.admin && <span className="tag">admin</span>}{' '}
                  {u.kind === 'SERVICE' && <span className="tag">service</span>} {u.disabled ? 'disabled' : 'active'}{' '}
                  <button type="button" className="link"
                    onClick={async () => (await disable({ input: { userId: u.id, disabled: !u.disabled } })) && reload()}>
                    {u.disabled ? `Enable ${u.login}` : `Disable ${u.login}`}
                  </button>{' '}
                  <button type="button" className="link" aria-expanded={editing === u.id}
                    onClick={() => setEditing(editing === u.id ? null : u.id)}>
                    Edit {u.login}
                  </button>{' '}
                  <button type="button" className="link" aria-expanded={tokensOf?.id === u.id}
                    onClick={() => setTokensOf(tokensOf?.id === u.id ? null : u)}>
                    API tokens of {u.login}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {data?.users.pageInfo.hasNextPage && <p className="hint">The first 100 users are shown.</p>}
      <FieldErrors errors={disabling.errors} field={null} />
      {editing && users.some((u) => u.id === editing) && (
        <UserEditor key={editing} user={users.find((u) => u.id === editing)} onChanged={reload} />
      )}
      {tokensOf && <ApiTokens key={tokensOf.id} user={tokensOf} />}
      <form className="form" onSubmit={submit} aria-label="New user">
        <h3>New user</h3>
        <div className="row">
          <Field label="Login" name="login" required errors={creating.errors} value={values.login}
            onChange={(e) => set('login', e.target.value)} />
          {!values.service && (
            <Field label="Password" name="password" type="password" autoComplete="new-password" required
              errors={creating.errors} value={values.password} onChange={(e) => set('password', e.target.value)} />
          )}
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
        <label className="check">
          <input type="checkbox" checked={values.service} onChange={(e) => set('service', e.target.checked)} /> Service
          user (an integration: it signs in with API tokens alone)
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

export function Admin({ tab = 'users' }) {
  const tabs = [
    ['users', 'Users'],
    ['groups', 'Groups'],
    ['workflows', 'Workflows'],
    ['jobs', 'Failed jobs'],
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
      {tab === 'jobs' && <FailedJobs />}
    </section>
  );
}
