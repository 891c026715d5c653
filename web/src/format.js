// How values read on the page: names, money, times ("3 minutes ago") and activity entries as
// sentences ("Alice Analyst approved Tiles", "Carol Controller became Reviewer").
import { partyNameById, workflowNames } from './api/names.js';

export function partyName(party) {
  if (!party) return '—';
  return party.displayName || party.login || party.name;
}

export function money(item) {
  if (item.amount == null) return null;
  return `${Number(item.amount).toLocaleString(undefined, { maximumFractionDigits: 2 })} ${item.currency || ''}`.trim();
}

export function when(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString();
}

const UNITS = [
  ['year', 365 * 86400],
  ['month', 30 * 86400],
  ['week', 7 * 86400],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
];
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "just now", "5 minutes ago", "in 2 days": the exact time is the <time> element's title. */
export function ago(iso, now = Date.now()) {
  if (!iso) return '';
  const seconds = (new Date(iso).getTime() - now) / 1000;
  if (Math.abs(seconds) < 45) return 'just now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'minute') return relative.format(Math.round(seconds / size), unit);
  }
  return '';
}

/** Today as YYYY-MM-DD in the viewer's time zone: a due date before it is overdue. */
export function today() {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

export function overdue(dueDate) {
  return Boolean(dueDate) && dueDate < today();
}

function names(ids) {
  const list = (ids || []).map((id) => partyNameById(id) || 'someone');
  if (list.length <= 1) return list[0] || 'nobody';
  return `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`;
}

const INTENT_WORDS = {
  view: 'view',
  viewHistory: 'read the history of',
  update: 'edit',
  close: 'close',
  assign: 'assign',
  create: 'create items in',
  grantPermission: 'grant permissions on',
  revokePermission: 'revoke permissions on',
  reorderWorkflowItems: 'reorder',
};

function intentWords(intent) {
  const verb = (intent || '').split('.').pop();
  return INTENT_WORDS[verb] || verb;
}

/** An activity entry as a sentence. `context` says which item/subproject/project the page shows,
 * for entries that do not carry it. */
export function describe(entry, context = {}) {
  // A deputy's deed: "Bob Builder (for Alice Analyst) approved Tiles".
  const deputy = entry.onBehalfOf ? ` (for ${partyName(entry.onBehalfOf)})` : '';
  const who = entry.actor ? `${entry.actor.displayName}${deputy}` : 'The system';
  const item = entry.workflowItem || context.workflowItem;
  const thing = item?.displayName || entry.subproject?.displayName || entry.project?.displayName || 'it';
  const data = entry.data || {};
  const wf = workflowNames(item?.case?.workflow?.id);
  const role = (short) => wf?.roles?.[short] || short;
  switch (entry.kind) {
    case 'action_executed': {
      const past = wf?.past?.[entry.action] || entry.action;
      if (entry.action === 'comment') return `${who} commented on ${thing}`;
      if (wf?.init?.has(entry.action)) return `${thing} started its ${wf.name} workflow`;
      // "approved Tiles", but "started review on Tiles": a one-word past tense takes its object.
      return `${who} ${past.toLowerCase()}${past.trim().includes(' ') ? ' on' : ''} ${thing}`;
    }
    case 'role_assigned':
      return `${names(data.partyIds)} became ${role(data.role)} on ${thing}`;
    case 'role_reassigned': {
      const before = data.before || [];
      const after = data.after || [];
      const added = after.filter((p) => !before.includes(p));
      const removed = before.filter((p) => !after.includes(p));
      const parts = [];
      if (added.length) parts.push(`${names(added)} became ${role(data.role)}`);
      if (removed.length) parts.push(`${names(removed)} no longer ${removed.length > 1 ? 'are' : 'is'} ${role(data.role)}`);
      return `${parts.join('; ') || `${role(data.role)} unchanged`} on ${thing} (by ${who})`;
    }
    case 'workflow_item_created':
    case 'subproject_created':
    case 'project_created':
      return `${who} created ${thing}`;
    case 'workflow_item_updated':
    case 'subproject_updated':
    case 'project_updated':
      return `${who} edited ${thing}`;
    case 'workflow_item_assigned':
    case 'subproject_assigned':
    case 'project_assigned':
      return `${who} assigned ${thing} to ${names([data.assigneeId ?? data.assignee_id])}`;
    case 'subproject_closed':
    case 'project_closed':
      return `${who} closed ${thing}`;
    case 'workflow_items_reordered':
      return `${who} reordered the items of ${thing}`;
    case 'permission_granted':
      return `${who} let ${names([data.partyId])} ${intentWords(data.intent)} ${thing}`;
    case 'permission_revoked':
      return `${who} no longer lets ${names([data.partyId])} ${intentWords(data.intent)} ${thing}`;
    case 'document_added':
      return `${who} attached ${data.fileName || 'a document'} to ${thing}`;
    case 'document_removed':
      return `${who} removed ${data.fileName || 'a document'} from ${thing}`;
    case 'case_completed':
      return `${thing} is done`;
    case 'case_suspended':
      return `${who} put ${thing} on hold`;
    case 'case_resumed':
      return `${who} resumed ${thing}`;
    case 'case_canceled':
      return `${who} canceled ${thing}`;
    case 'case_migrated':
      return `${who} moved ${thing} from version ${data.fromVersion} to ${data.toVersion} of its workflow`;
    case 'subproject_workflow_changed':
      return `${who} moved ${thing} to version ${data.toVersion} of ${data.workflow}`;
    case 'timer_failed':
      return `A timer of ${thing} failed`;
    default:
      return `${who}: ${entry.kind.replace(/_/g, ' ')}${entry.action ? ` (${entry.action})` : ''} on ${thing}`;
  }
}

/** A size in bytes as people read it: 1 KB is 1024 bytes, one decimal below 10 units. */
export function bytes(n) {
  if (n == null) return '—';
  const units = ['bytes', 'KB', 'MB', 'GB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${n} ${n === 1 ? 'byte' : 'bytes'}`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
