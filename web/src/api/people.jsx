// The people and groups to pick from (assignees, role players, grants): every user and every
// group (at most MAX_PAGES pages of 100 each), read once a session, plus any group the page met
// otherwise. Reloaded on demand after an admin creates someone.
import { useEffect, useState } from 'react';

import { gql } from './client.js';
import { GROUPS, USERS } from './documents.js';

const MAX_PAGES = 5;
let users = null;
let loading = null;
const groups = new Map();
const listeners = new Set();

function changed() {
  for (const listener of listeners) listener();
}

export function reloadPeople() {
  users = null;
  loading = null;
  return loadPeople();
}

export function loadPeople() {
  loading ??= (async () => {
    const all = [];
    let after = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const { users: found } = await gql(USERS, { after });
      all.push(...found.edges.map((e) => e.node));
      if (!found.pageInfo.hasNextPage) break;
      after = found.pageInfo.endCursor;
    }
    after = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const { groups: found } = await gql(GROUPS, { after });
      for (const { node } of found.edges) groups.set(node.id, node);
      if (!found.pageInfo.hasNextPage) break;
      after = found.pageInfo.endCursor;
    }
    users = all;
    changed();
    return all;
  })().catch((failure) => {
    loading = null;
    throw failure;
  });
  return loading;
}

/** Remembers groups seen on the page (their __typename is Group). */
export function meetParties(list) {
  let added = false;
  for (const p of list || []) {
    if (p?.__typename === 'Group' && !groups.has(p.id)) {
      groups.set(p.id, p);
      added = true;
    }
  }
  if (added) changed();
}

/** `{ users, groups }` to pick from; users is [] until loaded. */
export function usePeople() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((t) => t + 1);
    listeners.add(listener);
    loadPeople().catch(() => {});
    return () => listeners.delete(listener);
  }, []);
  return { users: (users || []).filter((u) => !u.disabled), groups: [...groups.values()] };
}

/** <option>s for a party select: users, then groups. */
export function PartyOptions({ people }) {
  return (
    <>
      <optgroup label="People">
        {people.users.map((u) => (
          <option key={u.id} value={u.id}>
            {u.displayName} ({u.login})
          </option>
        ))}
      </optgroup>
      {people.groups.length > 0 && (
        <optgroup label="Groups">
          {people.groups.map((g) => (
            <option key={g.id} value={g.id}>
              {g.displayName}
            </option>
          ))}
        </optgroup>
      )}
    </>
  );
}
