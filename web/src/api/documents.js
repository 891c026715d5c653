// The GraphQL documents of the dashboard, written against schema/schema.graphql.

export const PARTY = `fragment Party on Party {
  __typename
  ... on User { id login displayName }
  ... on Group { id name displayName }
}`;

/** A case field's declaration, for the action dialog's form and the item page. */
export const CASE_FIELD = `fragment CaseFieldSpec on CaseField {
  name type label help required maxLength pattern min max choices { code label }
}`;

/** A workflow's case fields: read on their own, so that the board's and the tasks' reads stay
 * compiled (Workflow.fields has no SQL form). */
export const WORKFLOW_FIELDS = `query WorkflowFields($id: ID!) {
  node(id: $id) { ... on Workflow { id fields { ...CaseFieldSpec } } }
}
${CASE_FIELD}`;

export const CARD = `fragment Card on WorkflowItem {
  id displayName amount amountType currency dueDate status
  assignee { ...Party }
  subproject { id }
  case { id status version state { shortName prettyName } workflow { id } }
}`;

export const ACTIVITY = `fragment Activity on Activity {
  id seq at kind action comment data sentence
  actor { id login displayName }
  onBehalfOf { ...Party }
  project { id displayName }
  subproject { id displayName }
  workflowItem { ...Card }
}`;

export const LIVE_ACTIVITY = `subscription LiveActivity($after: String) {
  activity(after: $after) { ...Activity }
}
${ACTIVITY}
${CARD}
${PARTY}`;

const NOTE = `fragment Note on Notification {
  id level reason createdAt readAt sentence
  activity { id workflowItem { id displayName } }
}`;

export const LIVE_NOTIFICATIONS = `subscription LiveNotifications {
  notifications { ...Note }
}
${NOTE}`;

export const LOGIN = `mutation Login($login: String!, $password: String!) {
  login(input: {login: $login, password: $password}) {
    token user { id login displayName admin }
    userErrors { code message field }
  }
}`;

export const LOGOUT = `mutation Logout { logout { revokedTokens userErrors { code message } } }`;

export const VIEWER = `query Viewer { viewer { id login displayName admin } }`;

export const PROJECTS = `query Projects($filter: ProjectFilter) {
  projects(first: 100, filter: $filter) {
    totalCount
    edges { node {
      id displayName description status tags allowedIntents
      subprojects(first: 100) {
        totalCount
        edges { node { id displayName currency status workflow { prettyName version } } }
      }
    } }
  }
}`;

export const BOARD = `query Board($id: ID!, $first: Int!, $after: String, $filter: ProjectFilter) {
  node(id: $id) {
    ... on Subproject {
      id displayName description currency status allowedIntents workflowMode tags
      project { id displayName }
      assignee { ...Party }
      validator { ...Party }
      grantors { ...Party }
      workflow {
        id shortName prettyName version states { shortName prettyName terminal }
        roles { shortName prettyName }
        actions { shortName prettyName newState outputs { name newState } }
      }
      workflowItems(first: $first, after: $after, filter: $filter) {
        totalCount
        pageInfo { hasNextPage endCursor }
        edges { node { ...Card case { id fields } } }
      }
    }
  }
}
${CARD}
${PARTY}`;

export const REORDER = `mutation Reorder($subprojectId: ID!, $ordering: [ID!]!) {
  reorderWorkflowItems(input: {subprojectId: $subprojectId, ordering: $ordering}) {
    subproject { id workflowItemOrdering }
    userErrors { code message field }
  }
}`;

const HISTORY_ENTRY = `fragment HistoryEntry on Activity {
  id seq at kind action comment sentence actor { id login displayName }
}`;

export const ITEM = `query Item($id: ID!) {
  node(id: $id) {
    ... on WorkflowItem {
      ...Card
      description tags billingDate exchangeRate rejectReason createdAt allowedIntents additionalData
      subproject { id displayName currency project { id displayName } }
      case {
        id status version suspendedUntil fields
        state { shortName prettyName }
        workflow { id prettyName version diagram states { shortName prettyName } fields { ...CaseFieldSpec } }
        roles { role { shortName prettyName } assignees { ...Party } pickList { ...Party } }
        myActions {
          id fireAt
          action {
            shortName prettyName newState attachDocuments fields requiredFields
            outputs { name newState } resolutions { code prettyName }
          }
        }
      }
    }
  }
}
${CARD}
${PARTY}
${CASE_FIELD}`;

export const HISTORY = `query History($id: ID!, $after: String) {
  node(id: $id) {
    ... on WorkflowItem {
      history(first: 20, after: $after) {
        totalCount archived
        pageInfo { hasNextPage endCursor }
        edges { node { ...HistoryEntry } }
      }
    }
  }
}
${HISTORY_ENTRY}`;

export const EXECUTE = `mutation Execute($input: ExecuteActionInput!) {
  executeAction(input: $input) {
    activity { id seq }
    preview { version status route state { shortName prettyName } enabledActions { shortName prettyName } }
    case { id status version state { shortName prettyName } }
    userErrors { code message field }
  }
}`;

export const REASSIGN = `mutation Reassign($input: ReassignRoleInput!) {
  reassignRole(input: $input) { case { id } userErrors { code message field } }
}`;

export const TASKS = `query Tasks {
  myTasks(first: 100, orderBy: DUE_DATE) {
    pageInfo { hasNextPage }
    totalCount
    edges { node {
      id fireAt enabledAt dueDate overdue
      onBehalfOf { ... on User { id displayName } ... on Group { id displayName } }
      action {
        shortName prettyName newState attachDocuments fields requiredFields
        outputs { name newState } resolutions { code prettyName }
      }
      case {
        id version state { prettyName } fields
        workflow { id states { shortName prettyName } }
        workflowItem { id displayName dueDate allowedIntents subproject { id displayName currency } }
      }
    } }
  }
}`;

export const NOTIFICATIONS = `query Notifications {
  notifications(first: 20) {
    unreadCount
    edges { node { ...Note } }
  }
}
${NOTE}`;

export const MARK_READ = `mutation MarkRead { markNotificationsRead(input: {all: true}) { unreadCount userErrors { code message } } }`;

const DOCUMENT = `fragment Document on Document {
  id fileName sha256 url size contentType addedAt removed removedAt
  addedBy { id login displayName }
}`;

export const DOCUMENTS = `query Documents($id: ID!) {
  node(id: $id) {
    ... on WorkflowItem { id allowedIntents documents { ...Document } }
  }
}
${DOCUMENT}`;

export const ADD_DOCUMENT = `mutation AddDocument($input: AddDocumentInput!) {
  addDocument(input: $input) {
    document { ...Document }
    userErrors { code message field }
  }
}
${DOCUMENT}`;

export const REMOVE_DOCUMENT = `mutation RemoveDocument($input: RemoveDocumentInput!) {
  removeDocument(input: $input) {
    document { ...Document }
    userErrors { code message field }
  }
}
${DOCUMENT}`;

/** A job as the item page and the admin's "Failed jobs" view show it; whether the viewer may
 * pull its levers is the server's answer (canRetry, canResume). */
const JOB_ROW = `fragment JobRow on Job {
  id kind state attempts maxAttempts nextAttemptAt updatedAt input canRetry canResume
  error { code message }
  activity { action }
}`;

/** An item's jobs (Case.jobs: newest first, at most 100) and its workflow's action names. */
export const ITEM_JOBS = `query ItemJobs($id: ID!) {
  node(id: $id) { ... on WorkflowItem { id case { id
    workflow { id actions { shortName prettyName } }
    jobs { ...JobRow } } } }
}
${JOB_ROW}`;

/** The jobs waiting for a person across every project (an admin sees all): FAILED and STALLED,
 * at most 100 of each, with the item each belongs to. */
export const STUCK_JOBS = `query StuckJobs {
  failed: jobs(state: FAILED, first: 100) { totalCount edges { node { ...StuckJob } } }
  stalled: jobs(state: STALLED, first: 100) { totalCount edges { node { ...StuckJob } } }
}
fragment StuckJob on Job {
  ...JobRow
  case { id workflowItem { id displayName subproject { id displayName project { id displayName } } } }
}
${JOB_ROW}`;

export const RETRY_JOB = `mutation RetryJob($id: ID!) {
  retryJob(input: {id: $id}) { job { ...JobRow } userErrors { code message field } }
}
${JOB_ROW}`;

export const RESUME_JOB = `mutation ResumeJob($id: ID!) {
  resumeJob(input: {id: $id}) { job { ...JobRow } userErrors { code message field } }
}
${JOB_ROW}`;

const ERRORS = 'userErrors { code message field }';
const DIAGNOSTIC = 'diagnostics { code severity path message hint }';

export const CREATE_PROJECT = `mutation CreateProject($input: CreateProjectInput!) {
  createProject(input: $input) { project { id displayName } ${ERRORS} }
}`;

export const UPDATE_PROJECT = `mutation UpdateProject($input: UpdateResourceInput!) {
  updateProject(input: $input) { project { id } ${ERRORS} }
}`;

export const CLOSE_PROJECT = `mutation CloseProject($input: CloseInput!) {
  closeProject(input: $input) { project { id status } ${ERRORS} }
}`;

export const CREATE_SUBPROJECT = `mutation CreateSubproject($input: CreateSubprojectInput!) {
  createSubproject(input: $input) { subproject { id displayName } ${ERRORS} }
}`;

export const UPDATE_SUBPROJECT = `mutation UpdateSubproject($input: UpdateResourceInput!) {
  updateSubproject(input: $input) { subproject { id } ${ERRORS} }
}`;

export const ASSIGN_SUBPROJECT = `mutation AssignSubproject($input: AssignInput!) {
  assignSubproject(input: $input) { subproject { id } ${ERRORS} }
}`;

export const SET_VALIDATOR = `mutation SetValidator($input: SetSubprojectValidatorInput!) {
  setSubprojectValidator(input: $input) { subproject { id } ${ERRORS} }
}`;

export const CLOSE_SUBPROJECT = `mutation CloseSubproject($input: CloseInput!) {
  closeSubproject(input: $input) { subproject { id status } ${ERRORS} }
}`;

export const CREATE_ITEM = `mutation CreateItem($input: CreateWorkflowItemInput!) {
  createWorkflowItem(input: $input) { workflowItem { id displayName } ${ERRORS} }
}`;

export const UPDATE_ITEM = `mutation UpdateItem($input: UpdateWorkflowItemInput!) {
  updateWorkflowItem(input: $input) { workflowItem { id } ${ERRORS} }
}`;

export const ASSIGN_ITEM = `mutation AssignItem($input: AssignInput!) {
  assignWorkflowItem(input: $input) { workflowItem { id } ${ERRORS} }
}`;

export const CANCEL_CASE = `mutation CancelCase($input: CancelCaseInput!) {
  cancelCase(input: $input) { case { id status } ${ERRORS} }
}`;

export const SUSPEND_CASE = `mutation SuspendCase($input: SuspendCaseInput!) {
  suspendCase(input: $input) { case { id status version suspendedUntil } ${ERRORS} }
}`;

export const RESUME_CASE = `mutation ResumeCase($input: ResumeCaseInput!) {
  resumeCase(input: $input) { case { id status version } ${ERRORS} }
}`;

/** The latest version of each workflow to start a subproject with (all versions, oldest first). */
export const WORKFLOWS = `query WorkflowList($after: String) {
  workflows(first: 100, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { node {
      id shortName prettyName version
      roles { shortName prettyName }
      states { shortName prettyName terminal }
      actions { shortName prettyName }
    } }
  }
}`;

export const WORKFLOW = `query WorkflowDetail($id: ID!) {
  node(id: $id) { ... on Workflow { id shortName prettyName version spec diagram } }
}`;

export const DEFINE_WORKFLOW = `mutation DefineWorkflow($input: DefineWorkflowInput!) {
  defineWorkflow(input: $input) { workflow { id shortName version } ${DIAGNOSTIC} ${ERRORS} }
}`;

export const USERS = `query Users($after: String) {
  users(first: 100, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { id login displayName organization admin disabled kind } }
  }
}`;

/** The admin's list: what an admin may read of each user besides their names. */
export const ADMIN_USERS = `query AdminUsers($after: String) {
  users(first: 100, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { id login displayName organization admin disabled kind email timeZone globalIntents } }
  }
}`;

export const UPDATE_USER = `mutation UpdateUser($input: UpdateUserInput!) {
  updateUser(input: $input) { user { id displayName organization } ${ERRORS} }
}`;

export const RESET_PASSWORD = `mutation ResetPassword($input: ResetPasswordInput!) {
  resetPassword(input: $input) { user { id } ${ERRORS} }
}`;

export const SET_CONTACT = `mutation SetContact($input: SetNotificationDeliveryInput!) {
  setNotificationDelivery(input: $input) { user { id email timeZone } ${ERRORS} }
}`;

export const CREATE_USER = `mutation CreateUser($input: CreateUserInput!) {
  createUser(input: $input) { user { id login displayName } ${ERRORS} }
}`;

export const API_TOKENS = `query ApiTokens($userId: ID!) {
  apiTokens(userId: $userId) { id name scopes createdAt lastUsedAt expiresAt }
}`;

export const CREATE_API_TOKEN = `mutation CreateApiToken($input: CreateApiTokenInput!) {
  createApiToken(input: $input) { token apiToken { id name scopes createdAt lastUsedAt expiresAt } ${ERRORS} }
}`;

export const REVOKE_API_TOKEN = `mutation RevokeApiToken($input: RevokeApiTokenInput!) {
  revokeApiToken(input: $input) { id ${ERRORS} }
}`;

export const DISABLE_USER = `mutation DisableUser($input: DisableUserInput!) {
  disableUser(input: $input) { user { id disabled } ${ERRORS} }
}`;

export const CREATE_GROUP = `mutation CreateGroup($input: CreateGroupInput!) {
  createGroup(input: $input) { group { id name displayName members { id login displayName } } ${ERRORS} }
}`;

export const ADD_MEMBER = `mutation AddMember($input: GroupMemberInput!) {
  addGroupMember(input: $input) { group { id members { id login displayName } } ${ERRORS} }
}`;

export const REMOVE_MEMBER = `mutation RemoveMember($input: GroupMemberInput!) {
  removeGroupMember(input: $input) { group { id members { id login displayName } } ${ERRORS} }
}`;

export const PERMISSIONS = `query Permissions($id: ID!) {
  node(id: $id) {
    __typename
    ... on Project { id displayName allowedIntents permissions { ...Grant } }
    ... on Subproject { id displayName allowedIntents permissions { ...Grant } }
    ... on WorkflowItem { id displayName allowedIntents permissions { ...Grant } }
  }
}
fragment Grant on PermissionGrant {
  intent holders { inherited reachesDown inheritedFrom party { ...Party } }
}
${PARTY}`;

export const GRANT = `mutation Grant($input: PermissionInput!) {
  grantPermission(input: $input) { ${ERRORS} }
}`;

export const REVOKE = `mutation Revoke($input: PermissionInput!) {
  revokePermission(input: $input) { ${ERRORS} }
}`;

/** What the viewer may do on one card now: for a drag onto another column. */
export const CARD_ACTIONS = `query CardActions($id: ID!) {
  node(id: $id) {
    ... on WorkflowItem {
      id displayName
      case {
        id version fields
        workflow { id fields { ...CaseFieldSpec } }
        myActions {
          id
          action {
            shortName prettyName newState attachDocuments fields requiredFields
            outputs { name newState } resolutions { code prettyName }
          }
        }
      }
    }
  }
}
${CASE_FIELD}`;

export const GROUPS = `query Groups($after: String, $search: String) {
  groups(first: 100, after: $after, search: $search) {
    pageInfo { hasNextPage endCursor }
    edges { node { __typename id name displayName members { id login displayName } } }
  }
}`;

export const SEARCH = `query Search($query: String!, $after: String) {
  search(query: $query, first: 20, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { node {
      __typename id
      ... on Project { displayName description status }
      ... on Subproject { displayName description status project { id displayName } }
      ... on WorkflowItem {
        displayName description status dueDate
        subproject { id displayName }
        case { id state { prettyName } }
      }
    } }
  }
}`;


export const VALIDATE_WORKFLOW = `query ValidateWorkflow($spec: JSON!) {
  validateWorkflow(spec: $spec) { ${DIAGNOSTIC} ${ERRORS} }
}`;
