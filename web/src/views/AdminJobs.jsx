// For administrators: the jobs waiting for a person across every project, FAILED ones first,
// then STALLED ones, each with its item (a link), its last error in words, and Retry or Resume
// (as the server allows: Job.canRetry, Job.canResume). At most 100 of each are listed.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { STUCK_JOBS } from '../api/documents.js';
import { ago, when } from '../format.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';
import { JobLevers, NextAttempt } from './ItemJobs.jsx';
import { jobAttempts, jobState, jobWhat } from './jobFormat.js';

function Where({ job }) {
  const item = job.case?.workflowItem;
  if (!item) return job.case ? <span>An item you may not see</span> : <span>No item</span>;
  const sub = item.subproject;
  return (
    <>
      <a href={`#/item/${item.id}`}>{item.displayName}</a>
      {sub && (
        <small className="hint">
          {' '}
          {sub.project?.displayName} › {sub.displayName}
        </small>
      )}
    </>
  );
}

function JobTable({ title, testid, connection, onChanged }) {
  const jobs = connection.edges.map((e) => e.node);
  return (
    <section aria-label={title}>
      <h3>
        {title} <small>{connection.totalCount}</small>
      </h3>
      {jobs.length === 0 ? (
        <Empty>None.</Empty>
      ) : (
        <div className="scroll-x">
          <table className="list" data-testid={testid}>
            <thead>
              <tr>
                <th scope="col">Item</th>
                <th scope="col">Job</th>
                <th scope="col">State</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last error</th>
                <th scope="col">Since</th>
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
                    <Where job={job} />
                  </td>
                  <td>{jobWhat(job)}</td>
                  <td data-testid="job-state">{jobState(job.state)}</td>
                  <td>{jobAttempts(job)}</td>
                  <td data-testid="job-error">{job.error?.message ?? '—'}</td>
                  <td>
                    <time dateTime={job.updatedAt} title={when(job.updatedAt)}>
                      {ago(job.updatedAt)}
                    </time>
                  </td>
                  <td>
                    <NextAttempt job={job} />
                  </td>
                  <td>
                    <JobLevers job={job} onDone={onChanged} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {connection.totalCount > jobs.length && (
        <p className="hint">The oldest {jobs.length} of {connection.totalCount} are shown.</p>
      )}
    </section>
  );
}

export function FailedJobs() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(STUCK_JOBS), []);
  const [said, setSaid] = useState('');
  const changed = (job, verb) => {
    setSaid(`${jobWhat(job)} ${verb}: ${jobState(job.state).toLowerCase()}.`);
    reload();
  };
  return (
    <section aria-labelledby="failed-jobs-title">
      <h2 id="failed-jobs-title">Failed jobs</h2>
      <p className="hint">
        Webhook deliveries and emails that failed for good wait for a person; stalled ones try again by themselves.{' '}
        <button type="button" className="link" onClick={reload} disabled={loading}>
          Look again
        </button>
      </p>
      {loading && !data && <Loading what="jobs" />}
      <Failed error={error} retry={reload} />
      <p role="status" data-testid="jobs-said">
        {said}
      </p>
      {data && (
        <>
          <JobTable title="Failed" testid="failed-jobs" connection={data.failed} onChanged={changed} />
          <JobTable title="Stalled" testid="stalled-jobs" connection={data.stalled} onChanged={changed} />
        </>
      )}
    </section>
  );
}
