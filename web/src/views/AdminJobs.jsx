// For administrators: the jobs waiting for a person across every project, FAILED ones first,
// then STALLED ones, each with its item (a link), its last error in words, and Retry or Resume
// (as the server allows: Job.canRetry, Job.canResume). At most 100 of each are listed.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { STUCK_JOBS } from '../api/documents.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';
import { jobState, jobWhat } from './jobFormat.js';
import { JobHead, JobRow } from './JobRow.jsx';

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
            <JobHead across />
            <tbody>
              {jobs.map((job) => (
                <JobRow key={job.id} job={job} onDone={onChanged} where={<Where job={job} />} />
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
