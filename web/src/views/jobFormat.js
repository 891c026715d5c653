// Jobs in words for the item page (ItemJobs.jsx) and the admin's "Failed jobs" view
// (AdminJobs.jsx): a job's state and kind, its attempts, and when the page should look again.
// Whether a person may retry or resume a job is the server's answer (Job.canRetry,
// Job.canResume), never guessed here.

const STATE_WORDS = {
  PENDING: 'Waiting to run',
  RUNNING: 'Running',
  STALLED: 'Stalled, will try again',
  COMPLETED: 'Done',
  FAILED: 'Failed, needs a person',
};

export function jobState(state) {
  return STATE_WORDS[state] ?? state;
}

/** What the job does: "Webhook to billing", "Email". */
export function jobWhat(job) {
  if (job.kind === 'webhook') return job.input?.endpoint ? `Webhook to ${job.input.endpoint}` : 'Webhook';
  if (job.kind === 'email') return 'Email';
  return `${job.kind.charAt(0).toUpperCase()}${job.kind.slice(1)} job`;
}

/** "2 of 5". */
export function jobAttempts(job) {
  return `${job.attempts} of ${job.maxAttempts}`;
}

/** Whether the job is not finished yet: its row changes by itself, so the page looks again. */
export function jobMoving(job) {
  return job.state === 'PENDING' || job.state === 'RUNNING' || job.state === 'STALLED';
}

/** How long until the page should look at these jobs again (ms), or null when none moves: at
 * the next due attempt, between 1 and 30 seconds; every 2 seconds while one is due or running. */
export function nextLook(jobs, now = Date.now()) {
  const moving = jobs.filter(jobMoving);
  if (!moving.length) return null;
  if (moving.some((j) => j.state !== 'STALLED' || !j.nextAttemptAt)) return 2000;
  const soonest = Math.min(...moving.map((j) => new Date(j.nextAttemptAt).getTime()));
  return Math.min(30000, Math.max(1000, soonest - now + 500));
}
