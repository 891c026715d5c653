// Runs graphql-http's GraphQL-over-HTTP audit against a server and prints one JSON line:
// {"ok": n, "warn": [...], "error": [...]}. Usage: node audit.mjs http://host:port/graphql
import { auditServer } from 'graphql-http';

const url = process.argv[2];
const results = await auditServer({ url });
const summary = { ok: 0, warn: [], error: [] };
for (const result of results) {
  if (result.status === 'ok') summary.ok += 1;
  else summary[result.status].push(`${result.id} ${result.name}: ${result.reason}`);
}
console.log(JSON.stringify(summary));
