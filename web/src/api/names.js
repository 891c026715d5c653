// What the page needs to say things in words: people's and groups' full names by id, and each
// workflow version's role and action names (an activity entry carries ids and short names
// only). Filled lazily, at most NAMES_BATCH unknown ids a request; a view re-renders through
// useNames() once a batch it asked for has arrived.
import { useEffect, useState } from 'react';

import { gql } from './client.js';

const NAMES_BATCH = 20;
const parties = new Map(); // id → display name
const workflows = new Map(); // workflow id → { name, roles: {short: pretty}, past: {short: past tense}, init: Set }
const listeners = new Set();
const pending = new Set();
let workflowsLoading = null;
let timer = null;

const WORKFLOWS = `query Workflows($after: String) { workflows(first: 100, after: $after) {
  pageInfo { hasNextPage endCursor }
  edges { node { id roles { shortName prettyName } prettyName actions { shortName prettyName prettyPastTense trigger } } }
} }`;

function changed() {
  for (const listener of listeners) listener();
}

/** Remembers names the page already holds (a user list, a pick list, a role's assignees). */
export function rememberParties(list) {
  for (const p of list || []) if (p?.id && p.displayName) parties.set(p.id, p.displayName);
}

async function fetchParties() {
  timer = null;
  const ids = [...pending].slice(0, NAMES_BATCH);
  ids.forEach((id) => pending.delete(id));
  if (!ids.length) return;
  const vars = ids.map((_, i) => `$p${i}: ID!`).join(', ');
  const fields = ids
    .map((_, i) => `p${i}: node(id: $p${i}) { id ... on User { displayName } ... on Group { displayName } }`)
    .join('\n');
  const variables = Object.fromEntries(ids.map((id, i) => [`p${i}`, id]));
  try {
    const data = await gql(`query Names(${vars}) { ${fields} }`, variables);
    ids.forEach((id, i) => parties.set(id, data[`p${i}`]?.displayName ?? null));
  } catch {
    ids.forEach((id) => parties.set(id, null)); // unknown: said as "someone", not asked again
  }
  if (pending.size) timer = setTimeout(fetchParties, 0);
  changed();
}

/** A party's full name, or null while it is being looked up (or hidden from the viewer). */
export function partyNameById(id) {
  if (!id) return null;
  if (parties.has(id)) return parties.get(id);
  pending.add(id);
  timer ??= setTimeout(fetchParties, 10);
  return null;
}

async function loadWorkflows() {
  let after = null;
  for (let pages = 0; pages < 10; pages += 1) {
    const { workflows: page } = await gql(WORKFLOWS, { after });
    for (const { node } of page.edges) {
      workflows.set(node.id, {
        roles: Object.fromEntries(node.roles.map((r) => [r.shortName, r.prettyName])),
        name: node.prettyName,
        past: Object.fromEntries(node.actions.map((a) => [a.shortName, a.prettyPastTense || a.prettyName])),
        init: new Set(node.actions.filter((a) => a.trigger === 'INIT').map((a) => a.shortName)),
      });
    }
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  changed();
}

/** A workflow version's names, or null while loading (a version defined since is loaded anew). */
export function workflowNames(id) {
  if (!id) return null;
  if (workflows.has(id)) return workflows.get(id);
  if (!workflowsLoading) {
    workflowsLoading = loadWorkflows().finally(() => {
      setTimeout(() => {
        workflowsLoading = null;
      }, 5000); // at most one reload per 5 s for versions the page has not seen
    });
  }
  return null;
}

/** Re-renders the calling component when names it may be waiting for arrive. */
export function useNames() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((t) => t + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
}
