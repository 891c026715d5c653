// Signing in with the organization's identity provider (OpenID Connect): the authorization code
// with PKCE. The page sends the person to the provider with a challenge, keeps the verifier in
// this tab's sessionStorage, and hands the code the provider sends back to Caseway
// (POST /auth/oidc/token), which exchanges it (with the client secret, if any) and answers the
// provider's token: the bearer token from then on, GraphiQL's too.
import { RequestError } from './client.js';

const PENDING_KEY = 'caseway.oidc.pending';

/** The provider the server signs in with ({ name, authorizationEndpoint, clientId, scope }), or null. */
export async function providerConfig() {
  try {
    const response = await fetch('/auth/oidc', { headers: { Accept: 'application/json' } });
    return response.status === 200 ? await response.json() : null; // 204: the server offers none
  } catch {
    return null; // no provider to offer; the password form still works
  }
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random(length) {
  return base64url(window.crypto.getRandomValues(new Uint8Array(length)));
}

/** Leave for the provider's sign-in page. */
export async function startSignIn(config) {
  if (!window.crypto?.subtle) {
    throw new RequestError('Signing in with the identity provider needs this page over HTTPS (or on localhost).');
  }
  const verifier = random(32);
  const state = random(16);
  const digest = await window.crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  const redirectUri = `${window.location.origin}/`;
  window.sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier, redirectUri }));
  const url = new URL(config.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri,
    scope: config.scope,
    state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: 'S256',
  }).toString();
  window.location.assign(url.href);
}

/** Whether this page is the provider's answer (…/?code=…&state=… or ?error=…). */
export function isSignInReply() {
  const params = new URLSearchParams(window.location.search);
  return params.has('state') && (params.has('code') || params.has('error'));
}

/** The token for the provider's answer in this page's address; throws a RequestError saying why not. */
export async function finishSignIn() {
  const params = new URLSearchParams(window.location.search);
  const pending = JSON.parse(window.sessionStorage.getItem(PENDING_KEY) || 'null');
  window.sessionStorage.removeItem(PENDING_KEY);
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.hash}`); // the code is used once
  if (params.has('error')) {
    throw new RequestError(
      `The identity provider did not sign you in: ${params.get('error_description') || params.get('error')}.`,
    );
  }
  if (!pending || pending.state !== params.get('state')) {
    throw new RequestError('This sign-in was not started from this page (its state does not match): start it again.');
  }
  let response;
  try {
    response = await fetch('/auth/oidc/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: params.get('code'), codeVerifier: pending.verifier, redirectUri: pending.redirectUri }),
    });
  } catch {
    throw new RequestError('The server cannot be reached.', ['UNREACHABLE']);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok || !body?.token) {
    throw new RequestError(body?.errors?.[0]?.message || `The server answered ${response.status}.`);
  }
  return body.token;
}
