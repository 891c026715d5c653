// My tasks: the enabled actions assigned to the viewer across all cases, soonest due first
// (those without a due date after), overdue ones marked: myTasks(orderBy: DUE_DATE) and
// EnabledAction.overdue, so the server's order and judgement, over all of the viewer's tasks.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { TASKS } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { ago, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';
import { ActionDialog } from './ActionDialog.jsx';

const MAX_TASKS = 100;

/** Runs a task from the list: the action's dialog, its preview, then the real run. */
function TaskButton({ task, onDone }) {
  const [open, setOpen] = useState(false);
  const item = task.case?.workflowItem;
  if (!item) return null;
  const states = Object.fromEntries(task.case.workflow.states.map((s) => [s.shortName, s.prettyName]));
  return (
    <>
      <button type="button" onClick={() => setOpen(true)} aria-label={`${task.action.prettyName} ${item.displayName}`}>
        {task.action.prettyName}…
      </button>
      {open && (
        <ActionDialog
          item={item}
          caseVersion={task.case.version}
          enabled={task}
          states={states}
          workflowId={task.case.workflow.id}
          current={task.case.fields}
          currency={item.subproject?.currency}
          onClose={() => setOpen(false)}
          onDone={() => {
            setOpen(false);
            onDone();
          }}
        />
      )}
    </>
  );
}

export function Tasks() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(TASKS), []);
  const reloadSoon = useDebounced(reload, 300);
  useEffect(() => onActivity((entry) => entry.workflowItem && reloadSoon()), [reloadSoon]);
  if (!data) return loading ? <Loading what="your tasks" /> : <Failed error={error} retry={reload} />;
  const tasks = data.myTasks.edges.map((e) => e.node);
  const late = tasks.filter((t) => t.overdue).length;
  return (
    <section>
      <h1>
        My tasks <small>{data.myTasks.totalCount}</small>
      </h1>
      {late > 0 && (
        <p className="overdue" data-testid="overdue-count">
          {late} overdue
        </p>
      )}
      <Failed error={error} retry={reload} />
      {tasks.length === 0 && <Empty>Nothing is waiting for you.</Empty>}
      <ul className="tasks">
        {tasks.map((task) => {
          const item = task.case?.workflowItem; // none when the item is hidden from you
          const isLate = task.overdue;
          return (
            <li key={task.id} data-testid="task" className={isLate ? 'late' : undefined}>
              <strong>{task.action.prettyName}</strong>
              {task.onBehalfOf && <> for {task.onBehalfOf.displayName}</>} on{' '}
              {item ? <a href={`#/item/${item.id}`}>{item.displayName}</a> : 'a case'}{' '}
              <small>
                {task.case?.state.prettyName}
                {item?.subproject && ` · ${item.subproject.displayName}`}
                {task.dueDate && ` · due ${task.dueDate}`}
                {' · waiting since '}
                <time dateTime={task.enabledAt} title={when(task.enabledAt)}>
                  {ago(task.enabledAt)}
                </time>
              </small>
              {isLate && <strong className="overdue"> Overdue</strong>} <TaskButton task={task} onDone={reload} />
            </li>
          );
        })}
      </ul>
      {data.myTasks.pageInfo.hasNextPage && (
        <p className="hint">The first {MAX_TASKS} of your tasks by due date are shown.</p>
      )}
    </section>
  );
}
