import { useState } from 'react';

import { gql } from '../api/client.js';
import { LOGIN } from '../api/documents.js';
import { Failed, FieldErrors } from '../ui.jsx';

export function Login({ onSignedIn }) {
  const [login, setLogin] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState([]);
  const [failure, setFailure] = useState(null);

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setFailure(null);
    try {
      const { login: result } = await gql(LOGIN, { login, password });
      setErrors(result.userErrors);
      if (result.token) onSignedIn(result.token, result.user);
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="login" onSubmit={submit} aria-label="Sign in">
      <h1>Caseway</h1>
      <label>
        Login
        <input name="login" autoComplete="username" value={login} onChange={(e) => setLogin(e.target.value)} required />
      </label>
      <FieldErrors errors={errors} field="login" />
      <label>
        Password
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
        />
      </label>
      <FieldErrors errors={errors} field="password" />
      <FieldErrors errors={errors} field={null} shown={['login', 'password']} />
      <Failed error={failure} />
      <button type="submit" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
