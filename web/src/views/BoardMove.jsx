// The board's helpers: where a card may go (MoveDialog: the actions leading to a column, or
// from the keyboard to any column and earlier or later in its own), and the board's filters.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { CARD_ACTIONS } from '../api/documents.js';
import { partyName } from '../format.js';
import { Dialog, Failed, Loading } from '../ui.jsx';

/** The viewer's actions on `item` that lead to each state: [{state, enabled, output}]. */
function routes(node) {
  const out = [];
  for (const enabled of node.case.myActions) {
    const { action } = enabled;
    if (action.outputs.length) {
      for (const o of action.outputs) out.push({ state: o.newState, enabled, output: o.name });
    } else if (action.newState) {
      out.push({ state: action.newState, enabled, output: '' });
    }
  }
  return out;
}

/** Where a card can go: the actions leading to `target` (or to any state when target is null),
 * and, from the keyboard, earlier or later in its column. */
export function MoveDialog({ item, target, states, canReorder, onReorder, onChoose, onClose }) {
  const [found, setFound] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    gql(CARD_ACTIONS, { id: item.id }).then(
      ({ node }) => setFound(node ? { node, routes: routes(node) } : { node: null, routes: [] }),
      setError,
    );
  }, [item.id]);
  useEffect(() => {
    // Exactly one action leads to the column the card was dropped on: straight to its preview.
    if (found && target) {
      const here = found.routes.filter((r) => r.state === target);
      if (here.length === 1) onChoose(found.node, here[0]);
    }
  }, [found, target, onChoose]);
  const choices = found ? found.routes.filter((r) => !target || r.state === target) : [];
  const name = (s) => states.find((x) => x.shortName === s)?.prettyName ?? s;
  return (
    <Dialog title={target ? `Move ${item.displayName} to ${name(target)}` : `Move ${item.displayName}`} onClose={onClose}
      testid="move-dialog">
      <Failed error={error} />
      {!found && !error && <Loading what="what you may do" />}
      {found && choices.length === 0 && (
        <p className="state empty">
          {target
            ? `None of your actions takes ${item.displayName} from ${item.case.state.prettyName} to ${name(target)}.`
            : `Nothing of yours moves ${item.displayName} to another column now.`}
        </p>
      )}
      {choices.length > 0 && (
        <ul className="menu" aria-label="Actions">
          {choices.map((r) => (
            <li key={r.enabled.id + r.output}>
              <button type="button" onClick={() => onChoose(found.node, r)}>
                {r.enabled.action.prettyName}
                {r.output && ` (${r.output})`} → {name(r.state)}
              </button>
            </li>
          ))}
        </ul>
      )}
      {!target && canReorder && (
        <div className="buttons">
          <button type="button" onClick={() => onReorder(item, -1)}>
            Earlier in the column
          </button>
          <button type="button" onClick={() => onReorder(item, 1)}>
            Later in the column
          </button>
        </div>
      )}
    </Dialog>
  );
}

export function Filters({ filter, setFilter, people, subproject }) {
  return (
    <form className="filters" role="search" aria-label="Filter the board" onSubmit={(e) => e.preventDefault()}>
      <label>
        Name
        <input type="search" name="search" value={filter.search} maxLength={200} placeholder="Contains…"
          onChange={(e) => setFilter({ ...filter, search: e.target.value })} />
      </label>
      <label>
        Tag
        <input name="tag" value={filter.tag} maxLength={64} onChange={(e) => setFilter({ ...filter, tag: e.target.value })} />
      </label>
      <label>
        Status
        <select name="status" value={filter.status} onChange={(e) => setFilter({ ...filter, status: e.target.value })}>
          <option value="">Any</option>
          <option value="OPEN">Open</option>
          <option value="CLOSED">Closed</option>
        </select>
      </label>
      <label>
        Assignee
        <select name="assignee" value={filter.assignee} onChange={(e) => setFilter({ ...filter, assignee: e.target.value })}>
          <option value="">Anyone</option>
          {people.map((p) => (
            <option key={p.id} value={p.id}>
              {partyName(p)}
            </option>
          ))}
        </select>
      </label>
      <label className="check">
        <input type="checkbox" checked={filter.overdue} onChange={(e) => setFilter({ ...filter, overdue: e.target.checked })} />
        Overdue only
      </label>
      <span className="visually-hidden" aria-live="polite">{subproject}</span>
    </form>
  );
}

