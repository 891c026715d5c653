// My tasks: the enabled actions assigned to the viewer across all cases, oldest first.
import { useEffect } from 'react';

import { gql } from '../api/client.js';
import { TASKS } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';

export function Tasks() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(TASKS), []);
  const reloadSoon = useDebounced(reload, 300);
  useEffect(() => onActivity((entry) => entry.workflowItem && reloadSoon()), [reloadSoon]);
  if (!data) return loading ? <Loading what="your tasks" /> : <Failed error={error} retry={reload} />;
  const tasks = data.myTasks.edges.map((e) => e.node);
  return (
    <section>
      <h1>
        My tasks <small>{data.myTasks.totalCount}</small>
      </h1>
      <Failed error={error} retry={reload} />
      {tasks.length === 0 && <Empty>Nothing is waiting for you.</Empty>}
      <ul className="tasks">
        {tasks.map((task) => {
          const item = task.case.workflowItem;
          return (
            <li key={task.id} data-testid="task">
              <strong>{task.action.prettyName}</strong> on{' '}
              {item ? <a href={`#/item/${item.id}`}>{item.displayName}</a> : 'a case'}{' '}
              <small>
                {task.case.state.prettyName}
                {item?.subproject && ` · ${item.subproject.displayName}`}
                {item?.dueDate && ` · due ${item.dueDate}`}
              </small>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
