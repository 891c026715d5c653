// A workflow item: its fields, its case, who plays each role (reassign from the pick list), the
// viewer's actions as buttons, the workflow diagram, the documents and the history. Live: the
// item reloads on its events and new history entries appear at the end.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { ASSIGN_ITEM, CANCEL_CASE, HISTORY, ITEM, REASSIGN } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { useNames } from '../api/names.js';
import { PartyOptions, meetParties, usePeople } from '../api/people.jsx';
import { ago, describe, money, overdue, partyName, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Dialog, Empty, Failed, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { ActionDialog } from './ActionDialog.jsx';
import { CaseFieldList } from './CaseFields.jsx';
import { Diagram } from './Diagram.jsx';
import { Documents } from './Documents.jsx';
import { ItemForm } from './Forms.jsx';
import { ItemJobs } from './ItemJobs.jsx';

function ActionButton({ item, caseVersion, enabled, states, onDone }) {
  const kase = item.case;
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState(null);
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

function History({ id, item }) {
  useNames();
  const [pages, setPages] = useState({ entries: [], end: null, more: false, total: 0 });
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);

  async function page(after) {
    setLoading(true);
    try {
      const { node } = await gql(HISTORY, { id, after });
      const h = node.history;
      setPages((p) => ({
        entries: [...(after ? p.entries : []), ...h.edges.map((e) => e.node)],
        end: h.pageInfo.endCursor ?? p.end,
        more: h.pageInfo.hasNextPage,
        total: h.totalCount,
      }));
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
      {!loading && pages.entries.length === 0 && <Empty>No history you may read.</Empty>}
      <ol>
        {pages.entries.map((entry) => (
          <li key={entry.seq} data-testid="history-entry">
            <span className="sentence">{describe(entry, { workflowItem: item })}</span>
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

export function Item({ id }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(ITEM, { id }), [id]);
  const reloadSoon = useDebounced(reload, 100);
  const [editing, setEditing] = useState(false);

  useEffect(() => onActivity((entry) => entry.workflowItem?.id === id && reloadSoon()), [id, reloadSoon]);
  useEffect(() => {
    if (data?.node?.case) for (const role of data.node.case.roles) meetParties([...role.assignees, ...role.pickList]);
  }, [data]);

  if (!data) return loading ? <Loading what="the item" /> : <Failed error={error} retry={reload} />;
  const item = data.node;
  if (!item?.case) return <Empty>There is no such workflow item, or you may not view it.</Empty>;
  const c = item.case;
  const states = Object.fromEntries(c.workflow.states.map((s) => [s.shortName, s.prettyName]));
  const canUpdate = item.allowedIntents.includes('workflowItem.update') && item.status === 'OPEN';
  const canAssign = item.allowedIntents.includes('workflowItem.assign') && item.status === 'OPEN';
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
        {canUpdate && <CancelButton item={item} caseVersion={c.version} onDone={reload} />}
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
          onSaved={() => {
            setEditing(false);
            reload();
          }}
        />
      )}
      <Failed error={error} retry={reload} />
      <p className="case">
        <span className="state" data-testid="case-state">
          {c.state.prettyName}
        </span>{' '}
        <span className="tag" data-testid="case-status">
          {c.status}
        </span>{' '}
        {c.suspendedUntil && <span>until {when(c.suspendedUntil)}</span>}
      </p>
      {item.description && <p>{item.description}</p>}
      <dl className="fields">
        <dt>Amount</dt>
        <dd>
          {money(item) ?? '—'} ({item.amountType})
        </dd>
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
        <dd>{item.status}</dd>
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
      {c.myActions.length === 0 ? (
        <Empty>Nothing for you to do on this item now.</Empty>
      ) : (
        <ul className="actions" data-testid="my-actions">
          {c.myActions.map((enabled) => (
            <ActionButton key={enabled.id} item={item} caseVersion={c.version} enabled={enabled} states={states} onDone={reload} />
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
