// An item's case put on hold (suspendCase, optionally until a time), resumed (resumeCase) or
// canceled for good (cancelCase, "Close item…"): buttons for those who may update the item, as
// the case's status allows. Each sends the case's version, so a change made meanwhile is refused
// (VERSION_CONFLICT) rather than overridden.
import { useState } from 'react';

import { CANCEL_CASE, RESUME_CASE, SUSPEND_CASE } from '../api/documents.js';
import { Dialog, Field, FieldErrors, useMutation } from '../ui.jsx';

/** A datetime-local value ("2030-01-31T09:00", the viewer's time) as an ISO instant; '' is none. */
function instant(local) {
  return local ? new Date(local).toISOString() : null;
}

function SuspendButton({ item, caseVersion, onDone }) {
  const [open, setOpen] = useState(false);
  const [until, setUntil] = useState('');
  const [comment, setComment] = useState('');
  const [run, { busy, errors }] = useMutation(SUSPEND_CASE, 'suspendCase');
  async function submit(e) {
    e.preventDefault();
    const input = { workflowItemId: item.id, until: instant(until), comment: comment || null, expectedVersion: caseVersion };
    if (await run({ input })) {
      setOpen(false);
      onDone();
    }
  }
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Put on hold…
      </button>
      {open && (
        <Dialog title={`Put ${item.displayName} on hold`} onClose={() => setOpen(false)}>
          <form className="form" onSubmit={submit} aria-label="Put on hold">
            <p>While it is on hold nobody can act on it and its timers wait.</p>
            <Field label="Until" name="until" type="datetime-local" errors={errors} value={until}
              hint="Empty: until someone resumes it." onChange={(e) => setUntil(e.target.value)} />
            <Field label="Why" name="comment" errors={errors}>
              <textarea name="comment" value={comment} onChange={(e) => setComment(e.target.value)} />
            </Field>
            <FieldErrors errors={errors} field={null} shown={['until', 'comment']} />
            <div className="buttons">
              <button type="submit" className="primary" disabled={busy}>
                Put on hold
              </button>
              <button type="button" onClick={() => setOpen(false)}>
                Keep it running
              </button>
            </div>
          </form>
        </Dialog>
      )}
    </>
  );
}

function ResumeButton({ item, caseVersion, onDone }) {
  const [run, { busy, errors }] = useMutation(RESUME_CASE, 'resumeCase');
  return (
    <>
      <button type="button" disabled={busy}
        onClick={async () => (await run({ input: { workflowItemId: item.id, expectedVersion: caseVersion } })) && onDone()}>
        Resume
      </button>
      <FieldErrors errors={errors} field={null} />
    </>
  );
}

function CancelButton({ item, caseVersion, onDone }) {
  const [open, setOpen] = useState(false);
  const [comment, setComment] = useState('');
  const [run, { busy, errors }] = useMutation(CANCEL_CASE, 'cancelCase');
  async function submit(e) {
    e.preventDefault();
    if (await run({ input: { workflowItemId: item.id, comment: comment || null, expectedVersion: caseVersion } })) {
      setOpen(false);
      onDone();
    }
  }
  return (
    <>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Close item…
      </button>
      {open && (
        <Dialog title={`Close ${item.displayName}`} onClose={() => setOpen(false)}>
          <form className="form" onSubmit={submit} aria-label="Close item">
            <p>Closing cancels its case for good: nothing can be done on it afterwards.</p>
            <label>
              Why
              <textarea value={comment} onChange={(e) => setComment(e.target.value)} />
            </label>
            <FieldErrors errors={errors} field={null} />
            <div className="buttons">
              <button type="submit" className="danger" disabled={busy}>
                Close it for good
              </button>
              <button type="button" onClick={() => setOpen(false)}>
                Keep it open
              </button>
            </div>
          </form>
        </Dialog>
      )}
    </>
  );
}

/** The lifecycle buttons the case's status allows: an active case may be put on hold, a held one
 * resumed, either closed for good. */
export function CaseLifecycle({ item, onDone }) {
  const kase = item.case;
  const running = kase.status === 'ACTIVE';
  const held = kase.status === 'SUSPENDED';
  if (!running && !held) return null;
  return (
    <>
      {running && <SuspendButton item={item} caseVersion={kase.version} onDone={onDone} />}
      {held && <ResumeButton item={item} caseVersion={kase.version} onDone={onDone} />}
      <CancelButton item={item} caseVersion={kase.version} onDone={onDone} />
    </>
  );
}
