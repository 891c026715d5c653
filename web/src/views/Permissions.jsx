// A resource's permissions (project, subproject or workflow item): who holds each intent, and,
// as the server allows, granting one to a person or group and revoking it. On a project or
// subproject a grant may reach "this and everything in it, now and later" (inherit: true); a
// hold inherited from above says where from, and is revoked there. The server keeps the last
// holder of grantPermission (LAST_GRANT_HOLDER), shown at the row.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { GRANT, PERMISSIONS, REVOKE } from '../api/documents.js';
import { PartyOptions, meetParties, usePeople } from '../api/people.jsx';
import { partyName } from '../format.js';
import { useLoad } from '../hooks.js';
import { intentLabel, intentMeaning, intentsOf } from '../intents.js';
import { Empty, Failed, FieldErrors, Loading, useMutation } from '../ui.jsx';

export function Permissions({ id }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(PERMISSIONS, { id }), [id]);
  const people = usePeople();
  const [intent, setIntent] = useState('');
  const [party, setParty] = useState('');
  const [reach, setReach] = useState('this');
  const [grant, granting] = useMutation(GRANT, 'grantPermission');
  const [revoke, revoking] = useMutation(REVOKE, 'revokePermission');
  const [said, setSaid] = useState('');
  useEffect(() => {
    if (data?.node?.permissions) meetParties(data.node.permissions.flatMap((g) => g.holders.map((h) => h.party)));
  }, [data]);

  if (!data) return loading ? <Loading what="the permissions" /> : <Failed error={error} retry={reload} />;
  const node = data.node;
  if (!node) return <Empty>There is no such resource, or you may not view it.</Empty>;
  const kind = node.__typename;
  const back = kind === 'Subproject' ? `#/subproject/${node.id}` : kind === 'WorkflowItem' ? `#/item/${node.id}` : '#/';
  const mayGrant = node.allowedIntents.some((i) => i.endsWith('.intent.grantPermission'));
  const mayRevoke = node.allowedIntents.some((i) => i.endsWith('.intent.revokePermission'));
  const intents = intentsOf(kind);
  const hasBelow = kind !== 'WorkflowItem';

  async function submit(e) {
    e.preventDefault();
    const inherit = hasBelow && reach === 'below';
    if (await grant({ input: { resourceId: node.id, intent, partyId: party, inherit } })) {
      const holder = [...people.users, ...people.groups].find((p) => p.id === party);
      const what = `${holder ? partyName(holder) : 'They'} ${intentMeaning(intent)}`;
      setSaid(inherit ? `Granted: ${what}, on this and everything in it.` : `Granted: ${what}.`);
      reload();
    }
  }

  return (
    <section className="permissions-page">
      <p className="crumbs">
        <a href={back}>{node.displayName}</a> › Permissions
      </p>
      <h1>Permissions of {node.displayName}</h1>
      <Failed error={error} retry={reload} />
      {node.permissions === null ? (
        <Empty>You may not list the permissions of {node.displayName}.</Empty>
      ) : (
        <div className="scroll-x">
          <table className="grants" data-testid="grants">
            <thead>
              <tr>
                <th scope="col">Permission</th>
                <th scope="col">Who</th>
              </tr>
            </thead>
            <tbody>
              {node.permissions.map((g) => (
                <tr key={g.intent} data-intent={g.intent}>
                  <th scope="row" title={g.intent}>
                    {intentLabel(g.intent)}
                  </th>
                  <td>
                    <ul className="parties">
                      {g.holders.map((h) => (
                        <li key={`${h.party.id} ${h.inheritedFrom ?? (h.inherited ? 'above' : 'here')}`}
                          data-party={h.party.id} data-inherited={h.inherited || undefined}>
                          {partyName(h.party)}
                          {h.reachesDown && <span className="reach"> · this and everything in it</span>}
                          {h.inherited && (
                            <span className="reach">
                              {' · inherited from '}
                              {h.inheritedFrom ? (
                                <a href={`#/permissions/${h.inheritedFrom}`}>
                                  {h.inheritedFrom.startsWith('prj_') ? 'the project' : 'the subproject'}
                                </a>
                              ) : (
                                'above'
                              )}
                            </span>
                          )}
                          {mayRevoke && !h.inherited && (
                            <button type="button" className="link" aria-label={`Revoke "${intentMeaning(g.intent)}" from ${partyName(h.party)}`}
                              onClick={async () => {
                                const input = { resourceId: node.id, intent: g.intent, partyId: h.party.id, inherit: h.reachesDown };
                                if (await revoke({ input })) {
                                  setSaid(`Revoked from ${partyName(h.party)}: ${intentMeaning(g.intent)}.`);
                                  reload();
                                }
                              }}>
                              Revoke
                            </button>
                          )}
                        </li>
                      ))}
                    </ul>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <FieldErrors errors={revoking.errors} field={null} />
      {mayGrant && (
        <form className="form grant" onSubmit={submit} aria-label="Grant a permission">
          <h2>Grant</h2>
          <label htmlFor="grant-intent">Permission</label>
          <select id="grant-intent" name="intent" value={intent} onChange={(e) => setIntent(e.target.value)} required>
              <option value="">Choose…</option>
              {intents.map((i) => (
                <option key={i} value={i}>
                  {intentLabel(i)}
                </option>
              ))}
          </select>
          <label htmlFor="grant-party">To</label>
          <select id="grant-party" name="party" value={party} onChange={(e) => setParty(e.target.value)} required>
            <option value="">Choose…</option>
            <PartyOptions people={people} />
          </select>
          {hasBelow && (
            <fieldset className="reach">
              <legend>Where</legend>
              <label>
                <input type="radio" name="reach" value="this" checked={reach === 'this'} onChange={() => setReach('this')} />
                {` only this ${kind === 'Project' ? 'project' : 'subproject'}`}
              </label>
              <label>
                <input type="radio" name="reach" value="below" checked={reach === 'below'} onChange={() => setReach('below')} />
                {' this and everything in it, now and later'}
              </label>
            </fieldset>
          )}
          <FieldErrors errors={granting.errors} field={null} />
          <div className="buttons">
            <button type="submit" className="primary" disabled={granting.busy}>
              Grant
            </button>
          </div>
        </form>
      )}
      <p className="visually-hidden" role="status">
        {said}
      </p>
    </section>
  );
}
