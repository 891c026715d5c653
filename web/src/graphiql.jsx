// GraphiQL from Caseway's own assets: queries and mutations over HTTP, subscriptions over
// graphql-transport-ws (graphql-ws), the explorer plugin, and the headers tab for the token.
import 'graphiql/setup-workers/vite';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './graphiql.css';

import { explorerPlugin } from '@graphiql/plugin-explorer';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { getOperationAST, parse } from 'graphql';
import { createClient } from 'graphql-ws';
import { createRoot } from 'react-dom/client';

import { TOKEN_KEY } from './api/token.js';

const http = new URL('/graphql', window.location.href);
const ws = new URL(http);
ws.protocol = http.protocol === 'https:' ? 'wss:' : 'ws:';

// The headers tab's headers go with every HTTP request and, as connection_init's payload, with
// every subscription's socket: Caseway reads `authorization` from either.
const httpFetcher = createGraphiQLFetcher({ url: http.href });

function isSubscription({ query, operationName }) {
  try {
    return getOperationAST(parse(query), operationName || undefined)?.operation === 'subscription';
  } catch {
    return false; // not parsable: the server says why over HTTP
  }
}

/** Why a socket closed, in words: the server's reason (a refused token: 4403 and the sentence). */
function closedBecause(error) {
  if (error && typeof error.code === 'number') {
    return `The server closed the subscription (${error.code}): ${error.reason || 'no reason given'}`;
  }
  if (Array.isArray(error)) return error.map((e) => e.message).join(' ');
  return error?.message || 'The subscription failed: the server cannot be reached.';
}

/** One socket per subscription, its connection_init carrying the headers tab. The toolkit's
 * fetcher swallows a refused connection (the result pane spins forever): here its close becomes
 * an error in the result pane. */
async function* subscribe(params, headers) {
  const queue = [];
  let wake = null;
  let done = false;
  const push = (value) => {
    queue.push(value);
    wake?.();
  };
  const client = createClient({ url: ws.href, lazy: true, retryAttempts: 0, connectionParams: headers || {} });
  const stop = client.subscribe(params, {
    next: (result) => push({ result }),
    error: (error) => push({ result: { errors: [{ message: closedBecause(error) }] }, last: true }),
    complete: () => push({ last: true }),
  });
  try {
    while (!done) {
      if (!queue.length) await new Promise((resolve) => (wake = resolve));
      wake = null;
      const next = queue.shift();
      if (next.result) yield next.result;
      done = Boolean(next.last);
    }
  } finally {
    stop();
    client.dispose();
  }
}

function fetcher(params, options = {}) {
  if (isSubscription(params)) return subscribe(params, options.headers);
  return httpFetcher(params, options);
}

// Signed in on the dashboard? Start with its token in the headers tab.
const token = window.localStorage.getItem(TOKEN_KEY);
const defaultHeaders = JSON.stringify({ Authorization: token ? `Bearer ${token}` : 'Bearer <token from the login mutation>' }, null, 2);

const DEFAULT_QUERY = `# Caseway's GraphQL API. Sign in with the login mutation, then put
# {"Authorization": "Bearer <token>"} in the headers tab below.
#
# mutation { login(input: {login: "alice", password: "caseway-demo"}) { token userErrors { code message } } }

query Viewer {
  viewer { login displayName }
  projects(first: 10) { edges { node { id displayName } } }
}
`;

createRoot(document.getElementById('graphiql')).render(
  <GraphiQL
    fetcher={fetcher}
    plugins={[explorerPlugin()]}
    defaultHeaders={defaultHeaders}
    defaultQuery={DEFAULT_QUERY}
    defaultEditorToolsVisibility="headers"
    shouldPersistHeaders
  />,
);
