// An administrator's "Edit" panel for one user (Admin.jsx): their names (updateUser), where email
// reaches them and their time zone (setNotificationDelivery with userId), a new password
// (resetPassword: their sessions end, their API tokens stay), and the global permissions granted
// to them (grantPermission / revokePermission on `global`), each read as what it lets them do.
import { useEffect, useState } from 'react';

import { GRANT, RESET_PASSWORD, REVOKE, SET_CONTACT, UPDATE_USER } from '../api/documents.js';
import { reloadPeople } from '../api/people.jsx';
import { GLOBAL_INTENTS, intentLabel, intentMeaning } from '../intents.js';
import { Field, FieldErrors, useMutation } from '../ui.jsx';

function Names({ user, onChanged, say }) {
  const [values, setValues] = useState({
    displayName: user.displayName,
    organization: user.organization,
    email: user.email ?? '',
    timeZone: user.timeZone ?? 'UTC',
  });
  const [update, updating] = useMutation(UPDATE_USER, 'updateUser');
  const [contact, contacting] = useMutation(SET_CONTACT, 'setNotificationDelivery');
  const set = (k, v) => setValues((s) => ({ ...s, [k]: v }));
  const errors = [...updating.errors, ...contacting.errors];

  async function submit(e) {
    e.preventDefault();
    const names = { displayName: values.displayName, organization: values.organization };
    if (!(await update({ input: { userId: user.id, ...names } }))) return;
    const where = { email: values.email.trim() || null, timeZone: values.timeZone.trim() };
    if (where.email !== (user.email ?? null) || where.timeZone !== user.timeZone) {
      if (!(await contact({ input: { userId: user.id, ...where } }))) return;
    }
    say(`Saved ${values.displayName}.`);
    reloadPeople().catch(() => {});
    onChanged();
  }

  return (
    <form className="form" onSubmit={submit} aria-label={`Details of ${user.login}`}>
      <div className="row">
        <Field label="Full name" name="displayName" required errors={errors} value={values.displayName}
          onChange={(e) => set('displayName', e.target.value)} />
        <Field label="Organization" name="organization" errors={errors} value={values.organization}
          onChange={(e) => set('organization', e.target.value)} />
      </div>
      <div className="row">
        <Field label="Email" name="email" type="email" errors={errors} value={values.email}
          onChange={(e) => set('email', e.target.value)} />
        <Field label="Time zone" name="timeZone" errors={errors} value={values.timeZone}
          hint="As Europe/Berlin or UTC: dates in their email follow it." onChange={(e) => set('timeZone', e.target.value)} />
      </div>
      <FieldErrors errors={errors} field={null} shown={['displayName', 'organization', 'email', 'timeZone']} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={updating.busy || contacting.busy}>
          Save details
        </button>
      </div>
    </form>
  );
}

function Password({ user, say }) {
  const [password, setPassword] = useState('');
  const [reset, resetting] = useMutation(RESET_PASSWORD, 'resetPassword');
  if (user.kind === 'SERVICE') return <p className="hint">A service user has no password: it signs in with API tokens.</p>;
  return (
    <form className="form" aria-label={`New password for ${user.login}`}
      onSubmit={async (e) => {
        e.preventDefault();
        if (await reset({ input: { userId: user.id, password } })) {
          setPassword('');
          say(`${user.displayName} has a new password; they were signed out everywhere.`);
        }
      }}>
      <Field label="New password" name="password" type="password" autoComplete="new-password" required minLength={8}
        hint="At least 8 characters. Their open sessions end; their API tokens keep working." errors={resetting.errors}
        value={password} onChange={(e) => setPassword(e.target.value)} />
      <FieldErrors errors={resetting.errors} field={null} shown={['password']} />
      <div className="buttons">
        <button type="submit" disabled={resetting.busy}>
          Reset password
        </button>
      </div>
    </form>
  );
}

function GlobalPermissions({ user, onChanged, say }) {
  // Shown as asked at once, and as the server has it again once it answers (a refusal undoes it).
  const [held, setHeld] = useState(() => new Set(user.globalIntents ?? []));
  const known = (user.globalIntents ?? []).join(' ');
  useEffect(() => setHeld(new Set(known ? known.split(' ') : [])), [known]);
  const [grant, granting] = useMutation(GRANT, 'grantPermission');
  const [revoke, revoking] = useMutation(REVOKE, 'revokePermission');
  const busy = granting.busy || revoking.busy;
  async function toggle(intent, on) {
    const input = { resourceId: 'global', intent, partyId: user.id };
    const before = held;
    setHeld(new Set([...held].filter((i) => i !== intent).concat(on ? [intent] : [])));
    if (await (on ? grant : revoke)({ input })) {
      say(`${user.displayName} ${on ? 'now' : 'no longer'} ${intentMeaning(intent)}.`);
      onChanged();
    } else {
      setHeld(before);
    }
  }
  return (
    <fieldset className="global-intents" data-testid="global-intents">
      <legend>Everywhere, {user.displayName}…</legend>
      {GLOBAL_INTENTS.map((intent) => (
        <label className="check" key={intent} title={intent}>
          <input type="checkbox" name={intent} checked={held.has(intent)} disabled={busy}
            onChange={(e) => toggle(intent, e.target.checked)} />{' '}
          {intentLabel(intent)}
        </label>
      ))}
      {user.admin && <p className="hint">An administrator may do all of it anyway.</p>}
      <FieldErrors errors={[...granting.errors, ...revoking.errors]} field={null} />
    </fieldset>
  );
}

/** The panel below the users' table while a user's "Edit" is open. */
export function UserEditor({ user, onChanged }) {
  const [said, setSaid] = useState('');
  return (
    <section className="user-editor" aria-labelledby="user-editor-title" data-testid="user-editor">
      <h3 id="user-editor-title">
        Edit {user.displayName} <small>{user.login}</small>
      </h3>
      <Names user={user} onChanged={onChanged} say={setSaid} />
      <Password user={user} say={setSaid} />
      <GlobalPermissions user={user} onChanged={onChanged} say={setSaid} />
      <p role="status" data-testid="user-editor-said">
        {said}
      </p>
    </section>
  );
}
