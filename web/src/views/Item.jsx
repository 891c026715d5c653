// A workflow item: its fields, its case, who plays each role (reassign from the pick list), the
// viewer's actions as buttons, the workflow diagram, the documents and the history. Live: the
// item reloads on its events and new history entries appear at the end.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { EXECUTE, HISTORY, ITEM, REASSIGN } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { describe, money, partyName, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Empty, Failed, FieldErrors, Loading } from '../ui.jsx';
import { Diagram } from './Diagram.jsx';
import { Documents } from './Documents.jsx';

function ActionForm({ itemId, caseVersion, enabled, onDone }) {
  const { action } = enabled;
  const [open, setOpen] = useState(false);
  const [comment, setComment] = useState('');
  const [output, setOutput] = useState('');
  const [resolution, setResolution] = useState('');
  const [errors, setErrors] = useState([]);
  const [busy, setBusy] = useState(false);
  const simple = action.outputs.length === 0 && action.resolutions.length === 0;

  async function run(event) {
    event?.preventDefault();
    setBusy(true);
    const input = {
      workflowItemId: itemId,
      action: action.shortName,
      enabledActionId: enabled.id,
      expectedVersion: caseVersion,
      comment: comment || null,
      output: output || null,
      resolution: resolution || null,
    };
    try {
      const { executeAction: result } = await gql(EXECUTE, { input });
      setErrors(result.userErrors);
      if (!result.userErrors.length) {
        setOpen(false);
        setComment('');
        onDone();
      }
    } catch (failure) {
      setErrors([{ code: 'FAILED', message: failure.message, field: null }]);
    } finally {
      setBusy(false);
    }
  }

  if (!open) {
    return (
      <li>
        <button type="button" className="action" data-action={action.shortName} onClick={() => setOpen(true)}>
          {action.prettyName}
        </button>
        <FieldErrors errors={errors} field={null} />
      </li>
    );
  }
  return (
    <li>
      <form className="action-form" onSubmit={run} aria-label={action.prettyName}>
        <strong>{action.prettyName}</strong>
        {action.outputs.length > 0 && (
          <label>
            Outcome
            <select name="output" value={output} onChange={(e) => setOutput(e.target.value)}>
              <option value="">Choose…</option>
              {action.outputs.map((o) => (
                <option key={o.name} value={o.name}>
                  {o.name} → {o.newState}
                </option>
              ))}
            </select>
          </label>
        )}
        <FieldErrors errors={errors} field="output" />
        {action.resolutions.length > 0 && (
          <label>
            Resolution
            <select name="resolution" value={resolution} onChange={(e) => setResolution(e.target.value)}>
              <option value="">Choose…</option>
              {action.resolutions.map((r) => (
                <option key={r.code} value={r.code}>
                  {r.prettyName}
                </option>
              ))}
            </select>
          </label>
        )}
        <FieldErrors errors={errors} field="resolution" />
        <label>
          Comment
          <textarea name="comment" value={comment} onChange={(e) => setComment(e.target.value)} />
        </label>
        <FieldErrors errors={errors} field="comment" />
        <FieldErrors errors={errors} field={null} shown={['output', 'resolution', 'comment']} />
        <button type="submit" disabled={busy}>
          {busy ? 'Working…' : simple ? `${action.prettyName} now` : 'Confirm'}
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </form>
    </li>
  );
}

function RoleRow({ itemId, role, onDone }) {
  const [choice, setChoice] = useState('');
  const [errors, setErrors] = useState([]);

  async function reassign(event) {
    event.preventDefault();
    if (!choice) return;
    try {
      const { reassignRole: result } = await gql(REASSIGN, {
        input: { workflowItemId: itemId, role: role.role.shortName, partyIds: [choice], mode: 'REPLACE' },
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
          <select aria-label={`Reassign ${role.role.prettyName}`} value={choice} onChange={(e) => setChoice(e.target.value)}>
            <option value="">Reassign to…</option>
            {role.pickList.map((p) => (
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
            <time>{when(entry.at)}</time> {describe(entry)}
            {entry.comment && <q>{entry.comment}</q>}
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

export function Item({ id }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(ITEM, { id }), [id]);
  const reloadSoon = useDebounced(reload, 100);

  useEffect(() => onActivity((entry) => entry.workflowItem?.id === id && reloadSoon()), [id, reloadSoon]);

  if (!data) return loading ? <Loading what="the item" /> : <Failed error={error} retry={reload} />;
  const item = data.node;
  if (!item?.case) return <Empty>There is no such workflow item, or you may not view it.</Empty>;
  const c = item.case;
  return (
    <section className="item-page" data-testid="item" data-state={c.state.shortName}>
      <p className="crumbs">
        <a href="#/">{item.subproject?.project?.displayName ?? 'Projects'}</a> ›{' '}
        {item.subproject && <a href={`#/subproject/${item.subproject.id}`}>{item.subproject.displayName}</a>}
      </p>
      <h1>{item.displayName}</h1>
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
        <dd>{money(item) ?? '—'} ({item.amountType})</dd>
        <dt>Assignee</dt>
        <dd>{partyName(item.assignee)}</dd>
        <dt>Due</dt>
        <dd>{item.dueDate ?? '—'}</dd>
        <dt>Billing date</dt>
        <dd>{item.billingDate ?? '—'}</dd>
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
      </dl>
      <h2>Your actions</h2>
      {c.myActions.length === 0 ? (
        <Empty>Nothing for you to do on this item now.</Empty>
      ) : (
        <ul className="actions" data-testid="my-actions">
          {c.myActions.map((enabled) => (
            <ActionForm key={enabled.id} itemId={item.id} caseVersion={c.version} enabled={enabled} onDone={reload} />
          ))}
        </ul>
      )}
      <h2>Roles</h2>
      <table className="roles">
        <tbody>
          {c.roles.map((role) => (
            <RoleRow key={role.role.shortName} itemId={item.id} role={role} onDone={reload} />
          ))}
        </tbody>
      </table>
      <h2>
        Workflow: {c.workflow.prettyName} <small>v{c.workflow.version}</small>
      </h2>
      <Diagram source={c.workflow.diagram} current={c.state.shortName} />
      <Documents id={item.id} open={c.status === 'ACTIVE' || c.status === 'SUSPENDED'} />
      <History id={item.id} />
    </section>
  );
}
