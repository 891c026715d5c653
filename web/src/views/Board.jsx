// A subproject's board: its workflow items in columns by case state (the workflow's states in
// order), each column in the subproject's display order. Dragging a card onto another puts it
// before that one (reorderWorkflowItems). Live: a card follows its item's events in place.
import { memo, useCallback, useEffect, useRef, useState } from 'react';

import { gql } from '../api/client.js';
import { BOARD, REORDER } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { money, partyName } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Empty, Failed, FieldErrors, Loading } from '../ui.jsx';

async function loadBoard(id) {
  let after = null;
  let subproject = null;
  const items = [];
  // A page is at most 100 items; the board shows them all, a few pages at most (the ordering
  // itself is bounded by the server).
  for (;;) {
    const { node } = await gql(BOARD, { id, after });
    if (!node?.workflowItems) return null; // no such node, hidden, or not a subproject
    subproject = node;
    items.push(...node.workflowItems.edges.map((e) => e.node));
    if (!node.workflowItems.pageInfo.hasNextPage) break;
    after = node.workflowItems.pageInfo.endCursor;
  }
  return { subproject, items };
}

// Memoized: a live event re-renders the one card it changed, not the whole board.
const Card = memo(function Card({ item, draggable, onDragStart, onDrop }) {
  return (
    <article
      className="card"
      data-testid="card"
      data-item={item.id}
      data-state={item.case.state.shortName}
      draggable={draggable}
      onDragStart={(e) => {
        e.dataTransfer.setData('text/plain', item.id);
        e.dataTransfer.effectAllowed = 'move';
        onDragStart(item.id);
      }}
      onDragOver={(e) => draggable && e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        onDrop(item.id);
      }}
    >
      <a href={`#/item/${item.id}`}>{item.displayName}</a>
      <dl>
        {money(item) && (
          <>
            <dt>Amount</dt>
            <dd className="amount">{money(item)}</dd>
          </>
        )}
        <dt>Assignee</dt>
        <dd className="assignee">{partyName(item.assignee)}</dd>
        {item.dueDate && (
          <>
            <dt>Due</dt>
            <dd className="due">{item.dueDate}</dd>
          </>
        )}
      </dl>
      {item.case.status !== 'ACTIVE' && <span className="tag">{item.case.status}</span>}
    </article>
  );
});

export function Board({ id }) {
  const [{ loading, error, data }, reload] = useLoad(() => loadBoard(id), [id]);
  const [items, setItems] = useState([]);
  const [dragged, setDragged] = useState(null);
  const [reorderErrors, setReorderErrors] = useState([]);
  const reloadSoon = useDebounced(reload, 150);
  const dropRef = useRef(null);
  const onDrop = useCallback((targetId) => dropRef.current(targetId), []);

  useEffect(() => {
    if (data) setItems(data.items);
  }, [data]);

  useEffect(
    () =>
      onActivity((entry) => {
        const item = entry.workflowItem;
        const mine = entry.subproject?.id === id || item?.subproject?.id === id;
        if (!mine) return;
        if (item) {
          let known = false;
          setItems((current) =>
            current.map((it) => {
              if (it.id !== item.id) return it;
              known = true;
              return { ...it, ...item };
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
  const canReorder = subproject.allowedIntents.includes('subproject.reorderWorkflowItems');

  async function drop(targetId) {
    if (!canReorder || !dragged || dragged === targetId) return;
    const ids = items.map((it) => it.id).filter((x) => x !== dragged);
    ids.splice(ids.indexOf(targetId), 0, dragged);
    const before = items;
    const byId = new Map(items.map((it) => [it.id, it]));
    setItems(ids.map((x) => byId.get(x)));
    setDragged(null);
    try {
      const { reorderWorkflowItems: result } = await gql(REORDER, { subprojectId: id, ordering: ids });
      setReorderErrors(result.userErrors);
      if (result.userErrors.length) setItems(before);
    } catch (failure) {
      setReorderErrors([{ code: 'FAILED', message: failure.message, field: null }]);
      setItems(before);
    }
  }

  dropRef.current = drop;

  const states = [...subproject.workflow.states];
  for (const item of items) {
    if (!states.some((s) => s.shortName === item.case.state.shortName)) states.push(item.case.state);
  }
  return (
    <section className="board-page">
      <p className="crumbs">
        <a href="#/">{subproject.project?.displayName ?? 'Projects'}</a> › {subproject.displayName}
      </p>
      <h1>{subproject.displayName}</h1>
      <p>
        {subproject.workflow.prettyName} · {items.length} items · {subproject.currency}
        {canReorder && ' · drag a card onto another to put it before that one'}
      </p>
      <Failed error={error} retry={reload} />
      <FieldErrors errors={reorderErrors} field={null} />
      {items.length === 0 && <Empty>This subproject has no workflow items you may view.</Empty>}
      <div className="board" data-testid="board">
        {states.map((state) => {
          const column = items.filter((it) => it.case.state.shortName === state.shortName);
          return (
            <div className="column" key={state.shortName} data-testid="column" data-state={state.shortName}>
              <h2>
                {state.prettyName} <small>{column.length}</small>
              </h2>
              {column.map((item) => (
                <Card key={item.id} item={item} draggable={canReorder} onDragStart={setDragged} onDrop={onDrop} />
              ))}
            </div>
          );
        })}
      </div>
    </section>
  );
}
