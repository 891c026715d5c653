// The item's jobs (its webhook deliveries), a JobRow each (JobRow.jsx: what each does, its
// state, attempts, last error and next attempt, with Retry and Resume where the server allows),
// each after the action it followed. Live: it reloads on the item's events and, while a job is
// unfinished, when its next attempt falls due. Nothing is shown for an item without jobs, or
// whose jobs the viewer may not read.
import { useEffect } from 'react';

import { gql } from '../api/client.js';
import { ITEM_JOBS } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Failed } from '../ui.jsx';
import { nextLook } from './jobFormat.js';
import { JobHead, JobRow } from './JobRow.jsx';

export function ItemJobs({ itemId }) {
  const [{ error, data }, reload] = useLoad(() => gql(ITEM_JOBS, { id: itemId }), [itemId]);
  const reloadSoon = useDebounced(reload, 200);
  const kase = data?.node?.case;
  const jobs = kase?.jobs ?? [];

  useEffect(() => onActivity((entry) => entry.workflowItem?.id === itemId && reloadSoon()), [itemId, reloadSoon]);
  useEffect(() => {
    const wait = nextLook(jobs);
    if (wait === null) return undefined;
    const timer = setTimeout(reload, wait);
    return () => clearTimeout(timer);
  }, [jobs, reload]);

  if (!jobs.length) return <Failed error={error} retry={reload} />;
  const actions = Object.fromEntries((kase.workflow?.actions ?? []).map((a) => [a.shortName, a.prettyName]));
  return (
    <section className="jobs" aria-labelledby="jobs-title">
      <h2 id="jobs-title">
        Jobs <small>{jobs.length}</small>
      </h2>
      <Failed error={error} retry={reload} />
      <div className="scroll-x">
        <table className="list" data-testid="jobs">
          <JobHead />
          <tbody>
            {jobs.map((job) => (
              <JobRow key={job.id} job={job} onDone={reload}
                after={job.activity?.action && (actions[job.activity.action] ?? job.activity.action)} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
