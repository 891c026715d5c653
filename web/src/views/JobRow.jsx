// One job as a table row, and the table's header, for the item page's jobs (ItemJobs.jsx) and
// the admin's "Failed jobs" (AdminJobs.jsx): what the job does, its state in words, its
// attempts, its last error and when it runs next, with Retry (a FAILED job) and Resume (a
// STALLED one) where the server says the viewer may (Job.canRetry, Job.canResume). A list
// across items (the admin's) also says where each job is and since when it has waited.
import { RESUME_JOB, RETRY_JOB } from '../api/documents.js';
import { ago, when } from '../format.js';
import { FieldErrors, useMutation } from '../ui.jsx';
import { jobAttempts, jobMoving, jobState, jobWhat } from './jobFormat.js';

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

/** The header of a table of `JobRow`s; `across`: the rows are listed across items (an Item
 * column first, a Since column before Next attempt). */
export function JobHead({ across = false }) {
  return (
    <thead>
      <tr>
        {across && <th scope="col">Item</th>}
        <th scope="col">Job</th>
        <th scope="col">State</th>
        <th scope="col">Attempts</th>
        <th scope="col">Last error</th>
        {across && <th scope="col">Since</th>}
        <th scope="col">Next attempt</th>
        <th scope="col">
          <span className="visually-hidden">What you can do</span>
        </th>
      </tr>
    </thead>
  );
}

/** One job. `where`: the job's item, when the table lists jobs across items (its header is
 * `<JobHead across />`), which adds when the job last changed; `after`: a hint beside what the
 * job does (the item page names the action it followed); `onDone` as `JobLevers`'. */
export function JobRow({ job, onDone, where, after }) {
  const across = where !== undefined;
  return (
    <tr data-testid="job" data-state={job.state}>
      {across && <td>{where}</td>}
      <td>
        {jobWhat(job)}
        {after && <small className="hint"> after {after}</small>}
      </td>
      <td data-testid="job-state">{jobState(job.state)}</td>
      <td data-testid="job-attempts">{jobAttempts(job)}</td>
      <td data-testid="job-error">{job.error?.message ?? '—'}</td>
      {across && (
        <td>
          <time dateTime={job.updatedAt} title={when(job.updatedAt)}>
            {ago(job.updatedAt)}
          </time>
        </td>
      )}
      <td>
        <NextAttempt job={job} />
      </td>
      <td>
        <JobLevers job={job} onDone={onDone} />
      </td>
    </tr>
  );
}
