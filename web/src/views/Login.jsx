import { useEffect, useState } from 'react';

import { gql, setToken } from '../api/client.js';
import { LOGIN, VIEWER } from '../api/documents.js';
import { finishSignIn, isSignInReply, providerConfig, startSignIn } from '../api/oidc.js';
import { Failed, FieldErrors } from '../ui.jsx';

/** "Sign in with …": the organization's identity provider, when the server has one. */
function ProviderSignIn({ onSignedIn, busy, setBusy, setFailure }) {
  const [provider, setProvider] = useState(null);
  useEffect(() => {
    let live = true;
    providerConfig().then((found) => live && setProvider(found));
    return () => {
      live = false;
    };
  }, []);
  useEffect(() => {
    if (!isSignInReply()) return;
    setBusy(true);
    finishSignIn()
      .then(async (token) => {
        setToken(token);
        const { viewer } = await gql(VIEWER);
        onSignedIn(token, viewer);
      })
      .catch((error) => {
        setToken(null);
        setFailure(error);
        setBusy(false);
      });
  }, [onSignedIn, setBusy, setFailure]);

  if (!provider) return null;
  async function leave() {
    setFailure(null);
    setBusy(true);
    try {
      await startSignIn(provider);
    } catch (error) {
      setFailure(error);
      setBusy(false);
    }
  }
  return (
    <div className="login-provider">
      <span aria-hidden="true">or</span>
      <button type="button" onClick={leave} disabled={busy}>
        Sign in with {provider.name}
      </button>
    </div>
  );
}

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

  // The page's one landmark holds the form, and the login field has the focus: a person types
  // at once, and a screen reader lands where the page is.
  return (
    <main id="main">
    <form className="login" onSubmit={submit} aria-label="Sign in">
      <h1>Caseway</h1>
      <label>
        Login
        <input name="login" autoComplete="username" autoFocus value={login} onChange={(e) => setLogin(e.target.value)}
          required />
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
      <ProviderSignIn onSignedIn={onSignedIn} busy={busy} setBusy={setBusy} setFailure={setFailure} />
    </form>
    </main>
  );
}
