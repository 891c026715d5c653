// A subproject's board: its workflow items in columns by case state (the workflow's states in
// order), each column in the subproject's display order, scrolling inside the board on a narrow
// screen. Dragging a card onto a card of its column puts it before that one
// (reorderWorkflowItems); onto another column runs the action that leads there, after its
// preview (a menu when several do). Each card's "Move" button does both from the keyboard.
// Filters: name and tag (the server's), assignee and overdue (on the page). Live: a card follows
// its item's events in place.
import { memo, useCallback, useEffect, useRef, useState } from 'react';

import { gql } from '../api/client.js';
import { BOARD, CLOSE_SUBPROJECT, REORDER, WORKFLOW_FIELDS } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { meetParties } from '../api/people.jsx';
import { overdue, partyName } from '../format.js';
import { useDebounced, useLoad, useServerFilter } from '../hooks.js';
import { caseStatusWords, itemAmount } from '../words.js';
import { Dialog, Empty, Failed, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { ActionDialog } from './ActionDialog.jsx';
import { Filters, MoveDialog } from './BoardMove.jsx';
import { ItemForm, SubprojectForm } from './Forms.jsx';
import { SubprojectPeople } from './SubprojectPeople.jsx';

// The first page is small so that the first cards paint soon; the rest come 100 at a time.
const FIRST_PAGE = 40;
const PAGE = 100;

/** Every item of the board; `onPage` sees the board so far after each page but the last. */
async function loadBoard(id, filter, onPage) {
  let after = null;
  let subproject = null;
  const items = [];
  // The board shows all its items, a few pages at most (the ordering itself is bounded by the
  // server); at most 20 pages are read.
  for (let page = 0; page < 20; page += 1) {
    const { node } = await gql(BOARD, { id, after, filter, first: page === 0 ? FIRST_PAGE : PAGE });
    if (!node?.workflowItems) return null; // no such node, hidden, or not a subproject
    subproject = node;
    items.push(...node.workflowItems.edges.map((e) => e.node));
    if (!node.workflowItems.pageInfo.hasNextPage) break;
    onPage({ subproject, items: [...items], partial: true });
    after = node.workflowItems.pageInfo.endCursor;
  }
  return { subproject, items };
}

// Memoized: a live event re-renders the one card it changed, not the whole board.
const Card = memo(function Card({ item, draggable, onDragStart, onDrop, onMove }) {
  const late = overdue(item.dueDate) && item.status === 'OPEN';
  return (
    <article
      className={`card${late ? ' late' : ''}`}
      data-testid="card"
      data-item={item.id}
      data-state={item.case.state.shortName}
      draggable={draggable}
      onDragStart={(e) => {
        e.dataTransfer.setData('text/plain', item.id);
        e.dataTransfer.effectAllowed = 'move';
        onDragStart(item);
      }}
      onDragOver={(e) => draggable && e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        e.stopPropagation();
        onDrop(item);
      }}
    >
      <a href={`#/item/${item.id}`}>{item.displayName}</a>
      <dl>
        {itemAmount(item) && (
          <>
            <dt>Amount</dt>
            <dd className="amount">{itemAmount(item)}</dd>
          </>
        )}
        <dt>Assignee</dt>
        <dd className="assignee">{partyName(item.assignee)}</dd>
        {item.dueDate && (
          <>
            <dt>Due</dt>
            <dd className="due">
              {item.dueDate}
              {late && <strong className="overdue"> overdue</strong>}
            </dd>
          </>
        )}
      </dl>
      {item.case.status !== 'ACTIVE' && <span className="tag">{caseStatusWords(item.case.status)}</span>}
      {draggable && (
        <button type="button" className="link move" onClick={() => onMove(item)} aria-label={`Move ${item.displayName}`}>
          Move…
        </button>
      )}
    </article>
  );
});

const NO_FILTER = { search: '', tag: '', status: '', assignee: '', overdue: false, field: '' };

/** A filter by an enum case field's value (on the page): "name=code", or '' for none. */
function FieldFilter({ workflowId, value, onChange }) {
  const [fields, setFields] = useState([]);
  useEffect(() => {
    let live = true;
    gql(WORKFLOW_FIELDS, { id: workflowId }).then(
      ({ node }) => live && setFields(node?.fields ?? []),
      () => live && setFields([]),
    );
    return () => {
      live = false;
    };
  }, [workflowId]);
  const enums = fields.filter((f) => f.type === 'enum');
  if (!enums.length) return null;
  return (
    <label className="field-filter">
      Field{' '}
      <select name="field" value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">Any</option>
        {enums.map((f) => (
          <optgroup key={f.name} label={f.label}>
            {f.choices.map((c) => (
              <option key={c.code} value={`${f.name}=${c.code}`}>
                {f.label}: {c.label}
              </option>
            ))}
          </optgroup>
        ))}
      </select>
    </label>
  );
}

function fieldMatches(item, field) {
  if (!field) return true;
  const [name, code] = field.split('=');
  return item.case?.fields?.[name] === code;
}

/** The empty board's sentence: whom to ask when one expected items here (the subproject's
 * grantors: those who may grant permissions on it, a grant reaching down included). It never
 * says there are items one may not see: hidden is missing. */
function noItems(subproject) {
  const names = (subproject.grantors ?? []).map(partyName);
  if (names.length === 0) return 'This subproject has no workflow items you may view.';
  const named = names.length > 3 ? [...names.slice(0, 3), `${names.length - 3} more`] : names;
  const who = named.length === 1 ? named[0] : `${named.slice(0, -1).join(', ')} or ${named[named.length - 1]}`;
  return `This subproject has no workflow items you may view. If you expected some, ask ${who}, who may grant access to what is in it.`;
}

export function Board({ id }) {
  const [filter, setFilter] = useState(NO_FILTER);
  const serverFilter = useServerFilter(filter); // the name, tag and status filters are the server's
  const [partial, setPartial] = useState(null);
  const [{ loading, error, data: loaded }, reload] = useLoad(() => loadBoard(id, serverFilter, setPartial), [id, serverFilter]);
  // Until every page is in, the pages so far (of this board and filter).
  const data = loaded ?? (partial?.subproject.id === id ? partial : null);
  const [items, setItems] = useState([]);
  const [dragged, setDragged] = useState(null);
  const [reorderErrors, setReorderErrors] = useState([]);
  const [moving, setMoving] = useState(null); // {item, target}
  const [running, setRunning] = useState(null); // {node, route}
  const [dialog, setDialog] = useState(null); // 'item' | 'edit' | 'close'
  const [said, setSaid] = useState('');
  const reloadSoon = useDebounced(reload, 150);
  const dropRef = useRef(null);
  const onDrop = useCallback((target) => dropRef.current(target), []);
  const onMove = useCallback((item) => setMoving({ item, target: null }), []);
  const [close, closing] = useMutation(CLOSE_SUBPROJECT, 'closeSubproject');


  // The newest state of each item the live stream told of: a reload that was read before an
  // event committed must not put the card back where it was (the event is not sent again).
  const liveRef = useRef(new Map());
  useEffect(() => setPartial(null), [id, serverFilter]);
  useEffect(() => {
    if (data) {
      const live = liveRef.current;
      setItems(
        data.items.map((it) => {
          const newer = live.get(it.id);
          return newer && newer.case.version > it.case.version ? { ...it, ...newer } : it;
        }),
      );
      meetParties(data.items.map((it) => it.assignee));
    }
  }, [data]);

  useEffect(
    () =>
      onActivity((entry) => {
        const item = entry.workflowItem;
        const mine = entry.subproject?.id === id || item?.subproject?.id === id;
        if (!mine) return;
        if (item) {
          const seen = liveRef.current.get(item.id);
          if (!seen || seen.case.version <= item.case.version) liveRef.current.set(item.id, item);
          let known = false;
          setItems((current) =>
            current.map((it) => {
              if (it.id !== item.id) return it;
              known = true;
              return it.case.version > item.case.version ? it : { ...it, ...item }; // entries may come late
            }),
          );
          if (!known) reloadSoon(); // a new item: its place in the order comes from the server
        } else {
          reloadSoon(); // a reorder, or a change to the subproject
        }
      }),
    [id, reloadSoon],
  );

  if (!data) {
    if (loading) return <Loading what="the board" />;
    if (error) return <Failed error={error} retry={reload} />;
    return <Empty>There is no such subproject, or you may not view it.</Empty>;
  }
  const { subproject } = data;
  const intents = subproject.allowedIntents;
  const filtered = Boolean(serverFilter) || filter.assignee || filter.overdue || filter.field;
  // A reorder sends the whole order: only once every item is in, and none filtered out.
  const canReorder = intents.includes('subproject.reorderWorkflowItems') && !filtered && !data.partial;
  const canMove = subproject.status === 'OPEN';
  const open = subproject.status === 'OPEN';

  async function reorder(ids) {
    const before = items;
    const byId = new Map(items.map((it) => [it.id, it]));
    setItems(ids.map((x) => byId.get(x)));
    try {
      const { reorderWorkflowItems: result } = await gql(REORDER, { subprojectId: id, ordering: ids });
      setReorderErrors(result.userErrors);
      if (result.userErrors.length) setItems(before);
      return !result.userErrors.length;
    } catch (failure) {
      setReorderErrors([{ code: 'FAILED', message: failure.message, field: null }]);
      setItems(before);
      return false;
    }
  }

  async function drop(target) {
    const source = dragged;
    setDragged(null);
    if (!source || source.id === target.id) return;
    if (target.case.state.shortName !== source.case.state.shortName) {
      dropOnColumn(target.case.state.shortName, source);
      return;
    }
    if (!canReorder) return;
    const ids = items.map((it) => it.id).filter((x) => x !== source.id);
    ids.splice(ids.indexOf(target.id), 0, source.id);
    await reorder(ids);
  }

  function dropOnColumn(state, source = dragged) {
    setDragged(null);
    if (!source || source.case.state.shortName === state) return;
    setMoving({ item: source, target: state });
  }

  async function step(item, by) {
    // Earlier/later among the cards of its own column, as a drag would put it.
    const column = items.filter((it) => it.case.state.shortName === item.case.state.shortName);
    const at = column.findIndex((it) => it.id === item.id);
    const other = column[at + by];
    if (!other) {
      setSaid(`${item.displayName} is already ${by < 0 ? 'first' : 'last'} in its column.`);
      return;
    }
    const ids = items.map((it) => it.id).filter((x) => x !== item.id);
    const place = ids.indexOf(other.id) + (by > 0 ? 1 : 0);
    ids.splice(place, 0, item.id);
    if (await reorder(ids)) setSaid(`${item.displayName} moved ${by < 0 ? 'up' : 'down'}.`);
  }

  dropRef.current = drop;

  const states = [...subproject.workflow.states];
  for (const item of items) {
    if (!states.some((s) => s.shortName === item.case.state.shortName)) states.push(item.case.state);
  }
  const shown = items.filter(
    (it) =>
      (!filter.assignee || it.assignee?.id === filter.assignee) &&
      (!filter.overdue || (overdue(it.dueDate) && it.status === 'OPEN')) &&
      fieldMatches(it, filter.field),
  );
  const assignees = [...new Map(items.filter((it) => it.assignee).map((it) => [it.assignee.id, it.assignee])).values()];
  const stateNames = Object.fromEntries(states.map((s) => [s.shortName, s.prettyName]));
  return (
    <section className="board-page">
      <p className="crumbs">
        <a href="#/">{subproject.project?.displayName ?? 'Projects'}</a> › {subproject.displayName}
      </p>
      <h1>{subproject.displayName}</h1>
      <p>
        {subproject.workflow.prettyName} v{subproject.workflow.version} · {shown.length} of{' '}
        {data.partial ? `${items.length} so far of ${subproject.workflowItems.totalCount}` : items.length} items ·{' '}
        {subproject.currency}
        {subproject.status !== 'OPEN' && ' · closed'}
      </p>
      <SubprojectPeople subproject={subproject} onChanged={reload} />
      <div className="toolbar">
        {open && intents.includes('subproject.createWorkflowItem') && (
          <button type="button" className="primary" onClick={() => setDialog('item')}>
            New item
          </button>
        )}
        {open && intents.includes('subproject.update') && (
          <button type="button" onClick={() => setDialog('edit')}>
            Edit subproject
          </button>
        )}
        <a className="button" href={`#/insights/${subproject.id}`}>
          Insights
        </a>
        {intents.includes('subproject.intent.listPermissions') && (
          <a className="button" href={`#/permissions/${subproject.id}`}>
            Permissions
          </a>
        )}
        {open && intents.includes('subproject.close') && (
          <button type="button" className="danger" onClick={() => setDialog('close')}>
            Close subproject…
          </button>
        )}
      </div>
      <Filters filter={filter} setFilter={setFilter} people={assignees} subproject={`${shown.length} items shown`} />
      <FieldFilter workflowId={subproject.workflow.id} value={filter.field}
        onChange={(field) => setFilter((before) => ({ ...before, field }))} />
      {canReorder && (
        <p className="hint">
          Drag a card onto another to put it before that one, or onto another column to act on it; or use its Move button.
        </p>
      )}
      <Failed error={error} retry={reload} />
      <FieldErrors errors={[...reorderErrors, ...closing.errors]} field={null} />
      <p className="visually-hidden" role="status">
        {said}
      </p>
      {items.length === 0 && <Empty>{filtered ? 'No item matches.' : noItems(subproject)}</Empty>}
      {/* Focusable: on a narrow screen the columns scroll sideways with the arrow keys too. */}
      <div className="board" data-testid="board" tabIndex={0} role="region" aria-label="Board columns">
        {states.map((state) => {
          const column = shown.filter((it) => it.case.state.shortName === state.shortName);
          return (
            <section
              className={`column${dragged && dragged.case.state.shortName !== state.shortName ? ' droppable' : ''}`}
              key={state.shortName}
              data-testid="column"
              data-state={state.shortName}
              aria-label={`${state.prettyName}: ${column.length}`}
              onDragOver={(e) => dragged && canMove && e.preventDefault()}
              onDrop={(e) => {
                e.preventDefault();
                if (canMove) dropOnColumn(state.shortName);
              }}
            >
              <h2>
                {state.prettyName} <small>{column.length}</small>
              </h2>
              {column.map((item) => (
                <Card key={item.id} item={item} draggable={canMove} onDragStart={setDragged} onDrop={onDrop} onMove={onMove} />
              ))}
            </section>
          );
        })}
      </div>
      {moving && !running && (
        <MoveDialog
          item={moving.item}
          target={moving.target}
          states={states}
          canReorder={canReorder}
          onReorder={(item, by) => {
            setMoving(null);
            step(item, by);
          }}
          onChoose={(node, route) => setRunning({ node, route })}
          onClose={() => setMoving(null)}
        />
      )}
      {running && (
        <ActionDialog
          item={{ ...running.node, allowedIntents: [] }}
          caseVersion={running.node.case.version}
          enabled={running.route.enabled}
          output={running.route.output}
          states={stateNames}
          declared={running.node.case.workflow?.fields}
          current={running.node.case.fields}
          currency={subproject.currency}
          onClose={() => {
            setRunning(null);
            setMoving(null);
          }}
          onDone={(result) => {
            setRunning(null);
            setMoving(null);
            setSaid(`${running.node.displayName} is now ${result.case?.state.prettyName ?? ''}.`);
            reloadSoon();
          }}
        />
      )}
      {dialog === 'item' && (
        <ItemForm
          subproject={subproject}
          onClose={() => setDialog(null)}
          onSaved={() => {
            setDialog(null);
            reloadSoon();
          }}
        />
      )}
      {dialog === 'edit' && (
        <SubprojectForm
          subproject={subproject}
          onClose={() => setDialog(null)}
          onSaved={() => {
            setDialog(null);
            reload();
          }}
        />
      )}
      {dialog === 'close' && (
        <Dialog title={`Close ${subproject.displayName}`} onClose={() => setDialog(null)}>
          <p>A closed subproject takes no new items and no changes.</p>
          <FieldErrors errors={closing.errors} field={null} />
          <div className="buttons">
            <button
              type="button"
              className="danger"
              disabled={closing.busy}
              onClick={async () => {
                if (await close({ input: { id: subproject.id } })) {
                  setDialog(null);
                  reload();
                }
              }}
            >
              Close it
            </button>
            <button type="button" onClick={() => setDialog(null)}>
              Keep it open
            </button>
          </div>
        </Dialog>
      )}
    </section>
  );
}
