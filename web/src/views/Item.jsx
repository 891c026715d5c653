// A workflow item: its fields, its case, who plays each role (reassign from the pick list), the
// viewer's actions as buttons, the workflow diagram, the documents and the history. Live: the
// item reloads on its events and new history entries appear at the end.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { ASSIGN_ITEM, EXECUTE, HISTORY, ITEM, REASSIGN } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { PartyOptions, meetParties, usePeople } from '../api/people.jsx';
import { ago, overdue, partyName, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Dialog, Empty, Failed, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { amountTypeWords, caseStatusWords, itemAmount, itemStatusWords } from '../words.js';
import { ActionDialog } from './ActionDialog.jsx';
import { CaseFieldList } from './CaseFields.jsx';
import { CaseLifecycle } from './CaseLifecycle.jsx';
import { Diagram } from './Diagram.jsx';
import { Documents } from './Documents.jsx';
import { ItemForm } from './Forms.jsx';
import { ItemJobs } from './ItemJobs.jsx';

function ActionButton({ item, caseVersion, enabled, states, onDone, linked }) {
  const kase = item.case;
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState(null);
  // An email's link to this action (#/item/<id>/<action>) opens its dialog.
  useEffect(() => {
    if (linked) setOpen(true);
  }, [linked]);
  return (
    <li>
      <button type="button" className="action" data-action={enabled.action.shortName} onClick={() => setOpen(true)}>
        {enabled.action.prettyName}
      </button>
      {done && <span className="visually-hidden" role="status">{done}</span>}
      {open && (
        <ActionDialog
          item={item}
          caseVersion={caseVersion}
          enabled={enabled}
          states={states}
          declared={kase?.workflow?.fields}
          current={kase?.fields}
          currency={item.subproject?.currency}
          onClose={() => setOpen(false)}
          onDone={(result) => {
            setOpen(false);
            setDone(`${enabled.action.prettyName}: done, now ${result.case?.state.prettyName ?? ''}`);
            onDone();
          }}
        />
      )}
    </li>
  );
}

function RoleRow({ itemId, role, onDone }) {
  const [choice, setChoice] = useState('');
  const [mode, setMode] = useState('REPLACE');
  const [errors, setErrors] = useState([]);
  const people = usePeople();
  const choices = new Map();
  for (const p of [...role.pickList, ...role.assignees]) choices.set(p.id, p);
  for (const u of people.users) if (!choices.has(u.id)) choices.set(u.id, u);

  async function reassign(event) {
    event.preventDefault();
    if (!choice) return;
    try {
      const { reassignRole: result } = await gql(REASSIGN, {
        input: { workflowItemId: itemId, role: role.role.shortName, partyIds: [choice], mode },
      });
      setErrors(result.userErrors);
      if (!result.userErrors.length) onDone();
    } catch (failure) {
      setErrors([{ code: 'FAILED', message: failure.message, field: null }]);
    }
  }

  return (
    <tr data-role={role.role.shortName}>
      <th>{role.role.prettyName}</th>
      <td className="assignees">{role.assignees.map(partyName).join(', ') || '—'}</td>
      <td>
        <form onSubmit={reassign} className="inline">
          <select aria-label={`How to change ${role.role.prettyName}`} value={mode} onChange={(e) => setMode(e.target.value)}>
            <option value="REPLACE">Replace with</option>
            <option value="ADD">Add</option>
            <option value="REMOVE">Remove</option>
          </select>
          <select aria-label={`Reassign ${role.role.prettyName}`} value={choice} onChange={(e) => setChoice(e.target.value)}>
            <option value="">Choose…</option>
            {[...choices.values()].map((p) => (
              <option key={p.id} value={p.id}>
                {partyName(p)}
              </option>
            ))}
          </select>
          <button type="submit" disabled={!choice}>
            Reassign
          </button>
        </form>
        <FieldErrors errors={errors} field={null} />
      </td>
    </tr>
  );
}

function History({ id }) {
  const [pages, setPages] = useState({ entries: [], end: null, more: false, total: 0, archived: null });
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);

  async function page(after) {
    setLoading(true);
    try {
      const { node } = await gql(HISTORY, { id, after });
      const h = node.history;
      setPages((p) => {
        const read = [...(after ? p.entries : []), ...h.edges.map((e) => e.node)];
        // Entries the live stream brought while this page was on its way (a deed done as the page
        // opened) come after it: a last page read before they committed must not drop them.
        const last = read.length ? Number(read[read.length - 1].seq) : -1;
        const later = h.pageInfo.hasNextPage ? [] : p.entries.filter((e) => Number(e.seq) > last);
        return {
          entries: [...read, ...later],
          end: later.length ? String(later[later.length - 1].seq) : (h.pageInfo.endCursor ?? p.end),
          more: h.pageInfo.hasNextPage,
          total: h.totalCount + later.length,
          // where the oldest entries went (caseway archive-history): said on the first page
          archived: after ? p.archived : h.archived,
        };
      });
      setError(null);
    } catch (failure) {
      setError(failure);
    } finally {
      setLoading(false);
    }
  }

  useEffect(() => {
    page(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);

  useEffect(
    () =>
      onActivity((entry) => {
        if (entry.workflowItem?.id !== id) return;
        setPages((p) =>
          p.more || p.entries.some((e) => e.seq === entry.seq)
            ? { ...p, total: p.total + 1 }
            : { ...p, entries: [...p.entries, entry], end: String(entry.seq), total: p.total + 1 },
        );
      }),
    [id],
  );

  return (
    <section className="history">
      <h2>History <small>{pages.total}</small></h2>
      <Failed error={error} retry={() => page(pages.end)} />
      {pages.archived && (
        <p className="hint" data-testid="history-archived">
          {pages.archived}
        </p>
      )}
      {!loading && pages.entries.length === 0 && <Empty>No history you may read.</Empty>}
      <ol>
        {pages.entries.map((entry) => (
          <li key={entry.seq} data-testid="history-entry">
            <span className="sentence">{entry.sentence}</span>
            {entry.comment && <q>{entry.comment}</q>}
            <time dateTime={entry.at} title={when(entry.at)}>
              {ago(entry.at)}
            </time>
          </li>
        ))}
      </ol>
      {loading && <Loading what="history" />}
      {pages.more && !loading && (
        <button type="button" onClick={() => page(pages.end)}>
          Show more ({pages.total - pages.entries.length} more)
        </button>
      )}
    </section>
  );
}

function AssignButton({ item, onDone }) {
  const [open, setOpen] = useState(false);
  const [choice, setChoice] = useState('');
  const people = usePeople();
  const [run, { busy, errors }] = useMutation(ASSIGN_ITEM, 'assignWorkflowItem');
  async function submit(e) {
    e.preventDefault();
    if (await run({ input: { id: item.id, assigneeId: choice } })) {
      setOpen(false);
      onDone();
    }
  }
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Assign
      </button>
      {open && (
        <Dialog title={`Assign ${item.displayName}`} onClose={() => setOpen(false)}>
          <form className="form" onSubmit={submit} aria-label="Assign item">
            <label>
              Assignee
              <select value={choice} onChange={(e) => setChoice(e.target.value)} required>
                <option value="">Choose…</option>
                <PartyOptions people={people} />
              </select>
            </label>
            <FieldErrors errors={errors} field={null} />
            <div className="buttons">
              <button type="submit" className="primary" disabled={busy || !choice}>
                Assign
              </button>
              <button type="button" onClick={() => setOpen(false)}>
                Cancel
              </button>
            </div>
          </form>
        </Dialog>
      )}
    </>
  );
}

/** The workflow's own "Edit" step among the viewer's actions, when the item's fields editor is
 * shown too: the page then has one Edit, which saves the fields and runs that step. */
function editStep(myActions) {
  return myActions.find((e) => e.action.shortName === 'edit' || e.action.prettyName.trim().toLowerCase() === 'edit') ?? null;
}

/** A step that asks nothing (no outputs, resolutions, files or required fields) runs at once. */
function asksNothing(action) {
  return !action.outputs?.length && !action.resolutions?.length && !action.requiredFields?.length && !action.attachDocuments;
}

export function Item({ id, action }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(ITEM, { id }), [id]);
  const reloadSoon = useDebounced(reload, 100);
  const [editing, setEditing] = useState(false);
  const [stepping, setStepping] = useState(false); // the workflow's Edit step's dialog, after the fields
  const [stepErrors, setStepErrors] = useState([]);

  useEffect(() => onActivity((entry) => entry.workflowItem?.id === id && reloadSoon()), [id, reloadSoon]);
  useEffect(() => {
    if (data?.node?.case) for (const role of data.node.case.roles) meetParties([...role.assignees, ...role.pickList]);
  }, [data]);

  if (!data) return loading ? <Loading what="the item" /> : <Failed error={error} retry={reload} />;
  const item = data.node;
  if (!item?.case) return <Empty>There is no such workflow item, or you may not view it.</Empty>;
  const c = item.case;
  const states = Object.fromEntries(c.workflow.states.map((s) => [s.shortName, s.prettyName]));
  // #/item/<id>/<action>: an email's link to the reader's action on this item opens its dialog.
  const linked = action && c.myActions.find((enabled) => enabled.action.shortName === action)?.id;
  const canUpdate = item.allowedIntents.includes('workflowItem.update') && item.status === 'OPEN';
  const canAssign = item.allowedIntents.includes('workflowItem.assign') && item.status === 'OPEN';
  const step = canUpdate ? editStep(c.myActions) : null;
  const actions = step ? c.myActions.filter((e) => e !== step) : c.myActions;
  const amount = itemAmount(item);

  async function saved() {
    setEditing(false);
    if (step && asksNothing(step.action)) {
      try {
        const { executeAction: result } = await gql(EXECUTE, {
          input: { workflowItemId: item.id, action: step.action.shortName, enabledActionId: step.id },
        });
        setStepErrors(result.userErrors);
      } catch (failure) {
        setStepErrors([{ code: failure.codes?.[0] || 'FAILED', message: failure.message, field: null }]);
      }
    } else if (step) {
      setStepping(true); // its own inputs: its dialog, once the fields are saved
    }
    reload();
  }
  return (
    <section className="item-page" data-testid="item" data-state={c.state.shortName}>
      <p className="crumbs">
        <a href="#/">{item.subproject?.project?.displayName ?? 'Projects'}</a> ›{' '}
        {item.subproject && <a href={`#/subproject/${item.subproject.id}`}>{item.subproject.displayName}</a>}
      </p>
      <h1>{item.displayName}</h1>
      <div className="toolbar">
        {canUpdate && (
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
        {canAssign && <AssignButton item={item} onDone={reload} />}
        {canUpdate && <CaseLifecycle item={item} onDone={reload} />}
        {item.allowedIntents.includes('workflowItem.intent.listPermissions') && (
          <a className="button" href={`#/permissions/${item.id}`}>
            Permissions
          </a>
        )}
      </div>
      {editing && (
        <ItemForm
          subproject={item.subproject}
          item={item}
          onClose={() => setEditing(false)}
          onSaved={saved}
        />
      )}
      {stepping && step && (
        <ActionDialog
          item={item}
          caseVersion={c.version}
          enabled={step}
          states={states}
          declared={c.workflow.fields}
          current={c.fields}
          currency={item.subproject?.currency}
          onClose={() => setStepping(false)}
          onDone={() => {
            setStepping(false);
            reload();
          }}
        />
      )}
      <FieldErrors errors={stepErrors} field={null} />
      <Failed error={error} retry={reload} />
      <p className="case">
        <span className="state" data-testid="case-state">
          {c.state.prettyName}
        </span>{' '}
        {c.status !== 'ACTIVE' && (
          <span className="tag" data-testid="case-status">
            {caseStatusWords(c.status)}
          </span>
        )}{' '}
        {c.suspendedUntil && <span>until {when(c.suspendedUntil)}</span>}
      </p>
      {item.description && <p>{item.description}</p>}
      <dl className="fields">
        <dt>Amount</dt>
        <dd data-testid="item-amount">{amount ? `${amount}, ${amountTypeWords(item.amountType)}` : 'No amount'}</dd>
        <dt>Assignee</dt>
        <dd data-testid="item-assignee">{partyName(item.assignee)}</dd>
        <dt>Due</dt>
        <dd className={overdue(item.dueDate) && item.status === 'OPEN' ? 'overdue' : undefined}>
          {item.dueDate ?? '—'}
          {overdue(item.dueDate) && item.status === 'OPEN' && ' (overdue)'}
        </dd>
        <dt>Billing date</dt>
        <dd>{item.billingDate ?? '—'}</dd>
        {item.exchangeRate && (
          <>
            <dt>Exchange rate</dt>
            <dd>{item.exchangeRate}</dd>
          </>
        )}
        <dt>Item status</dt>
        <dd>{itemStatusWords(item.status)}</dd>
        {item.rejectReason && (
          <>
            <dt>Rejected because</dt>
            <dd>{item.rejectReason}</dd>
          </>
        )}
        {item.tags.length > 0 && (
          <>
            <dt>Tags</dt>
            <dd>{item.tags.join(', ')}</dd>
          </>
        )}
        {Object.keys(item.additionalData || {}).length > 0 && (
          <>
            <dt>Data</dt>
            <dd>
              <code>{JSON.stringify(item.additionalData)}</code>
            </dd>
          </>
        )}
      </dl>
      {Object.keys(c.fields || {}).length > 0 && (
        <>
          <h2>Fields</h2>
          <CaseFieldList declared={c.workflow.fields} values={c.fields} />
        </>
      )}
      <h2>Your actions</h2>
      {actions.length === 0 ? (
        <Empty>{step ? 'Nothing else for you to do on this item now: Edit above.' : 'Nothing for you to do on this item now.'}</Empty>
      ) : (
        <ul className="actions" data-testid="my-actions">
          {actions.map((enabled) => (
            <ActionButton
              key={enabled.id}
              item={item}
              caseVersion={c.version}
              enabled={enabled}
              states={states}
              onDone={reload}
              linked={enabled.id === linked}
            />
          ))}
        </ul>
      )}
      <h2>Roles</h2>
      <div className="scroll-x">
        <table className="roles">
          <tbody>
            {c.roles.map((role) => (
              <RoleRow key={role.role.shortName} itemId={item.id} role={role} onDone={reload} />
            ))}
          </tbody>
        </table>
      </div>
      <h2>
        Workflow: {c.workflow.prettyName} <small>v{c.workflow.version}</small>
      </h2>
      <Diagram source={c.workflow.diagram} current={c.state.shortName} />
      <Documents id={item.id} open={c.status === 'ACTIVE' || c.status === 'SUSPENDED'} />
      <ItemJobs itemId={item.id} />
      <History id={item.id} item={item} />
    </section>
  );
}
