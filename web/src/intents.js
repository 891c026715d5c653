// What each intent lets a party do, in words ("may grant permissions"), for every page that shows
// intents: the permissions page, the admin's global grants. The API's names
// (`project.intent.grantPermission`) stay the values sent; people read these.

/** The global intents (engine/people/intents.py's GLOBAL_INTENTS), granted on `global` by admins. */
export const GLOBAL_INTENTS = ['global.createProject', 'global.createUser', 'global.createGroup', 'global.defineWorkflow'];

const GLOBAL_MEANINGS = {
  'global.createProject': 'may create projects',
  'global.createUser': 'may create users',
  'global.createGroup': 'may create groups and choose their members',
  'global.defineWorkflow': 'may define and retire workflows',
};

// By the suffix a resource's intent has after its kind (`project.`, `subproject.`, `workflowItem.`).
const MEANINGS = {
  view: 'may view it',
  viewHistory: 'may read its history',
  update: 'may edit it',
  assign: 'may change its assignee',
  close: 'may close it',
  'intent.listPermissions': 'may see who holds which permission',
  'intent.grantPermission': 'may grant permissions',
  'intent.revokePermission': 'may revoke permissions',
  createSubproject: 'may create subprojects in it',
  createWorkflowItem: 'may create items in it',
  reorderWorkflowItems: 'may reorder its items',
};

// Where a kind's intent does more than the suffix says (docs/api.md, "Permissions").
const BY_KIND = {
  'subproject.assign': 'may change its assignee and validator',
  'workflowItem.update': 'may edit it, its documents and its case (suspend, resume, cancel)',
  'workflowItem.assign': 'may change its assignee and who plays its roles',
};

const SUFFIXES = ['view', 'viewHistory', 'update', 'assign', 'close', 'intent.listPermissions', 'intent.grantPermission',
  'intent.revokePermission'];
const PREFIX = { Project: 'project', Subproject: 'subproject', WorkflowItem: 'workflowItem' };
const EXTRA = { Project: ['createSubproject'], Subproject: ['createWorkflowItem', 'reorderWorkflowItems'], WorkflowItem: [] };

/** The intents a resource of this kind has (engine/people/intents.py's lists), in the API's names. */
export function intentsOf(kind) {
  const suffixes = [...SUFFIXES, ...EXTRA[kind]].filter((s) => !(kind === 'WorkflowItem' && s === 'close'));
  return suffixes.map((s) => `${PREFIX[kind]}.${s}`);
}

/** "may grant permissions" for `project.intent.grantPermission`; an intent unknown here reads as
 * its last word spelled out, never as the API's dotted name. */
export function intentMeaning(intent) {
  if (GLOBAL_MEANINGS[intent]) return GLOBAL_MEANINGS[intent];
  if (BY_KIND[intent]) return BY_KIND[intent];
  const suffix = (intent || '').slice((intent || '').indexOf('.') + 1);
  if (MEANINGS[suffix]) return MEANINGS[suffix];
  const last = suffix.split('.').pop() || '';
  return `may ${last.replace(/([A-Z])/g, ' $1').toLowerCase()}`;
}

/** The meaning with its first letter up, for a heading or a checkbox: "May grant permissions". */
export function intentLabel(intent) {
  const meaning = intentMeaning(intent);
  return meaning.charAt(0).toUpperCase() + meaning.slice(1);
}
