// The item's jobs (its webhook deliveries): what each does, its state in words, its attempts,
// its last error and when it runs next, with Retry (a FAILED job) and Resume (a STALLED one)
// for those the server says the viewer may pull (Job.canRetry, Job.canResume). Live: it reloads
// on the item's events and, while a job is unfinished, when its next attempt falls due. Nothing
// is shown for an item without jobs, or whose jobs the viewer may not read.
import { useEffect } from 'react';

import { gql } from '../api/client.js';
import { ITEM_JOBS, RESUME_JOB, RETRY_JOB } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { ago, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Failed, FieldErrors, useMutation } from '../ui.jsx';
import { jobAttempts, jobMoving, jobState, jobWhat, nextLook } from './jobFormat.js';

/** When the job runs next, in words ("in 2 minutes"), the exact time its title. */
export function NextAttempt({ job }) {
  if (job.state === 'RUNNING') return 'now';
  if (!jobMoving(job) || !job.nextAttemptAt) return '—';
  return (
    <time dateTime={job.nextAttemptAt} title={when(job.nextAttemptAt)}>
      {ago(job.nextAttemptAt)}
    </time>
  );
}

/** Retry and Resume, each only where the server says the viewer may; `onDone(job, verb)` after a
 * pull, with the job as it now is. */
export function JobLevers({ job, onDone }) {
  const [retry, retrying] = useMutation(RETRY_JOB, 'retryJob');
  const [resume, resuming] = useMutation(RESUME_JOB, 'resumeJob');
  const what = jobWhat(job).toLowerCase();
  return (
    <>
      {job.canRetry && (
        <button type="button" aria-label={`Retry ${what}`} disabled={retrying.busy}
          onClick={async () => {
            const done = await retry({ id: job.id });
            if (done) onDone(done.job, 'retried');
          }}>
          Retry
        </button>
      )}{' '}
      {job.canResume && (
        <button type="button" aria-label={`Resume ${what} now`} disabled={resuming.busy}
          onClick={async () => {
            const done = await resume({ id: job.id });
            if (done) onDone(done.job, 'resumed');
          }}>
          Resume now
        </button>
      )}
      <FieldErrors errors={[...retrying.errors, ...resuming.errors]} field={null} />
    </>
  );
}

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
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">State</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last error</th>
              <th scope="col">Next attempt</th>
              <th scope="col">
                <span className="visually-hidden">What you can do</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((job) => (
              <tr key={job.id} data-testid="job" data-state={job.state}>
                <td>
                  {jobWhat(job)}
                  {job.activity?.action && (
                    <small className="hint"> after {actions[job.activity.action] ?? job.activity.action}</small>
                  )}
                </td>
                <td data-testid="job-state">{jobState(job.state)}</td>
                <td data-testid="job-attempts">{jobAttempts(job)}</td>
                <td data-testid="job-error">{job.error?.message ?? '—'}</td>
                <td>
                  <NextAttempt job={job} />
                </td>
                <td>
                  <JobLevers job={job} onDone={reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
