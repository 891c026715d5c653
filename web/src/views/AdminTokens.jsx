// An administrator's "API tokens" panel for one user (Admin.jsx): the user's tokens (never their
// secrets), a form that makes one and shows its secret this once, and a Revoke button per token.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { API_TOKENS, CREATE_API_TOKEN, REVOKE_API_TOKEN } from '../api/documents.js';
import { when } from '../format.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Field, FieldErrors, Loading, useMutation } from '../ui.jsx';

const SCOPES = [
  ['READ', 'Read: queries and subscriptions'],
  ['EXECUTE', 'Execute: also actions and uploads'],
  ['WRITE', 'Write: everything the user may do'],
];

export function ApiTokens({ user }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(API_TOKENS, { userId: user.id }), [user.id]);
  const [values, setValues] = useState({ name: '', scope: 'READ', expires: '' });
  const [secret, setSecret] = useState(null); // { name, token }: shown until the next creation
  const [create, creating] = useMutation(CREATE_API_TOKEN, 'createApiToken');
  const [revoke, revoking] = useMutation(REVOKE_API_TOKEN, 'revokeApiToken');
  const tokens = data ? data.apiTokens : [];

  async function submit(e) {
    e.preventDefault();
    setSecret(null);
    const input = {
      userId: user.id,
      name: values.name,
      scopes: [values.scope],
      expiresAt: values.expires ? new Date(`${values.expires}T00:00:00Z`).toISOString() : null,
    };
    const payload = await create({ input });
    if (payload) {
      setSecret({ name: payload.apiToken.name, token: payload.token });
      setValues({ name: '', scope: 'READ', expires: '' });
      reload();
    }
  }

  return (
    <section className="tokens" aria-labelledby="tokens-title" data-testid="api-tokens">
      <h3 id="tokens-title">API tokens of {user.displayName}</h3>
      {loading && !data && <Loading what="API tokens" />}
      <Failed error={error} retry={reload} />
      {data && tokens.length === 0 && <Empty>No API tokens.</Empty>}
      {tokens.length > 0 && (
        <div className="scroll-x">
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Revoke</th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr key={t.id} data-token={t.name}>
                  <td>{t.name}</td>
                  <td>{t.scopes.join(', ')}</td>
                  <td>{when(t.createdAt)}</td>
                  <td>{t.lastUsedAt ? when(t.lastUsedAt) : 'never'}</td>
                  <td>{when(t.expiresAt)}</td>
                  <td>
                    <button type="button" className="link"
                      onClick={async () => (await revoke({ input: { id: t.id } })) && reload()}>
                      Revoke {t.name}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <FieldErrors errors={revoking.errors} field={null} />
      {secret && (
        <div className="secret" role="status" data-testid="token-secret">
          <p>
            The secret of <strong>{secret.name}</strong>: copy it now, it is not shown again.
          </p>
          <output>
            <code>{secret.token}</code>
          </output>
        </div>
      )}
      <form className="form" onSubmit={submit} aria-label={`New API token for ${user.login}`}>
        <div className="row">
          <Field label="Token name" name="name" required maxLength={64} errors={creating.errors} value={values.name}
            onChange={(e) => setValues({ ...values, name: e.target.value })} />
          <Field label="Scope" name="scopes" errors={creating.errors}>
            <select value={values.scope} onChange={(e) => setValues({ ...values, scope: e.target.value })}>
              {SCOPES.map(([scope, label]) => (
                <option key={scope} value={scope}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <div className="row">
          <Field label="Expires on" name="expiresAt" type="date" hint="Default: in 90 days; at most 366 days ahead."
            errors={creating.errors} value={values.expires}
            onChange={(e) => setValues({ ...values, expires: e.target.value })} />
        </div>
        <FieldErrors errors={creating.errors} field={null} shown={['name', 'scopes', 'expiresAt']} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={creating.busy}>
            Create token
          </button>
        </div>
      </form>
    </section>
  );
}
