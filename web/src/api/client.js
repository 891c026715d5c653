// Queries and mutations over HTTP with the signed-in user's bearer token.
import { TOKEN_KEY } from './token.js';

let token = window.localStorage.getItem(TOKEN_KEY);

export function getToken() {
  return token;
}

export function setToken(value) {
  token = value;
  if (value) window.localStorage.setItem(TOKEN_KEY, value);
  else window.localStorage.removeItem(TOKEN_KEY);
}

/** A request that failed as a whole: no answer, or GraphQL errors (each with its code). */
export class RequestError extends Error {
  constructor(message, codes = []) {
    super(message);
    this.codes = codes;
  }
}

export async function gql(query, variables = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  } catch {
    throw new RequestError('The server cannot be reached.', ['UNREACHABLE']);
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new RequestError(`The server answered ${response.status} without a GraphQL result.`);
  }
  if (body.errors?.length) {
    throw new RequestError(
      body.errors.map((e) => e.message).join(' '),
      body.errors.map((e) => e.extensions?.code),
    );
  }
  return body.data;
}
