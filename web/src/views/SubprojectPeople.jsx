// Who a subproject is assigned to and who validates it, on its board; for those who may assign it
// (subproject.assign), a dialog that changes either (assignSubproject, setSubprojectValidator).
// Cases take a new validator for the roles a workflow gives the validator when those roles are
// first needed.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { ASSIGN_SUBPROJECT, SET_VALIDATOR } from '../api/documents.js';
import { PartyOptions, usePeople } from '../api/people.jsx';
import { partyName } from '../format.js';
import { Dialog, FieldErrors } from '../ui.jsx';

function PeopleDialog({ subproject, onClose, onSaved }) {
  const people = usePeople();
  const [assignee, setAssignee] = useState(subproject.assignee?.id ?? '');
  const [validator, setValidator] = useState(subproject.validator?.id ?? '');
  const [errors, setErrors] = useState([]);
  const [busy, setBusy] = useState(false);

  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    try {
      // Each change is its own mutation; the first refused stops the second.
      if (assignee && assignee !== subproject.assignee?.id) {
        const { assignSubproject: r } = await gql(ASSIGN_SUBPROJECT, { input: { id: subproject.id, assigneeId: assignee } });
        if (r.userErrors.length) return setErrors(r.userErrors);
      }
      if (validator !== (subproject.validator?.id ?? '')) {
        const input = { id: subproject.id, validatorId: validator || null };
        const { setSubprojectValidator: r } = await gql(SET_VALIDATOR, { input });
        if (r.userErrors.length) return setErrors(r.userErrors);
      }
      onSaved();
    } catch (failure) {
      setErrors([{ code: failure.codes?.[0] || 'FAILED', message: failure.message, field: null }]);
    } finally {
      setBusy(false);
    }
    return null;
  }

  return (
    <Dialog title={`Assignee and validator of ${subproject.displayName}`} onClose={onClose}>
      <form className="form" onSubmit={submit} aria-label="Assignee and validator">
        <label>
          Assignee
          <select name="assignee" value={assignee} onChange={(e) => setAssignee(e.target.value)} required>
            <PartyOptions people={people} />
          </select>
        </label>
        <FieldErrors errors={errors} field="assigneeId" />
        <label>
          Validator
          <select name="validator" value={validator} onChange={(e) => setValidator(e.target.value)}>
            <option value="">Nobody</option>
            <PartyOptions people={people} />
          </select>
        </label>
        <p className="hint">A new validator takes the roles a workflow gives the validator when they are first needed.</p>
        <FieldErrors errors={errors} field="validatorId" />
        <FieldErrors errors={errors} field={null} shown={['assigneeId', 'validatorId']} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy}>
            Save
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** "Assigned to Alice Analyst · validated by Carol Controller", and the button to change them. */
export function SubprojectPeople({ subproject, onChanged }) {
  const [open, setOpen] = useState(false);
  const mayAssign = subproject.status === 'OPEN' && subproject.allowedIntents.includes('subproject.assign');
  return (
    <div className="subproject-people" data-testid="subproject-people">
      Assigned to <span data-testid="subproject-assignee">{partyName(subproject.assignee)}</span> · validated by{' '}
      <span data-testid="subproject-validator">{subproject.validator ? partyName(subproject.validator) : 'nobody'}</span>
      {mayAssign && (
        <>
          {' '}
          <button type="button" className="link" onClick={() => setOpen(true)}>
            Change assignee or validator
          </button>
        </>
      )}
      {open && (
        <PeopleDialog
          subproject={subproject}
          onClose={() => setOpen(false)}
          onSaved={() => {
            setOpen(false);
            onChanged();
          }}
        />
      )}
    </div>
  );
}
