// A real OpenID Connect provider for the tests (oidc-provider, with its development login and
// consent pages): listens on a free port of 127.0.0.1 and prints {"issuer": ...} as its first
// line. CLIENTS (JSON: oidc-provider client metadata) and ACCOUNTS (JSON: login -> {name,
// groups}) come from the environment. Anyone may sign in with any password; the subject of
// login "ada" is "sub-ada".
import http from 'node:http';

import Provider from 'oidc-provider';

const clients = JSON.parse(process.env.CLIENTS || '[]');
const accounts = JSON.parse(process.env.ACCOUNTS || '{}');

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients,
    cookies: { keys: ['caseway-tests'] },
    claims: { openid: ['sub'], profile: ['preferred_username', 'name', 'groups'] },
    // The ID token carries the profile claims (Caseway reads the login and groups from it).
    conformIdTokenClaims: false,
    async findAccount(ctx, id) {
      const account = accounts[id] || {};
      return {
        accountId: id,
        async claims() {
          return { sub: `sub-${id}`, preferred_username: id, name: account.name || id, groups: account.groups || [] };
        },
      };
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
