// GraphiQL from Caseway's own assets: queries and mutations over HTTP, subscriptions over
// graphql-transport-ws (graphql-ws), the explorer plugin, and the headers tab for the token.
import 'graphiql/setup-workers/vite';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './graphiql.css';

import { explorerPlugin } from '@graphiql/plugin-explorer';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { createRoot } from 'react-dom/client';

import { TOKEN_KEY } from './api/token.js';

const http = new URL('/graphql', window.location.href);
const ws = new URL(http);
ws.protocol = http.protocol === 'https:' ? 'wss:' : 'ws:';

// The headers tab's headers go with every HTTP request and, as connection_init's payload, with
// every subscription's socket: Caseway reads `authorization` from either.
const fetcher = createGraphiQLFetcher({ url: http.href, subscriptionUrl: ws.href });

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
