// The GraphQL documents of the dashboard, written against schema/schema.graphql.

export const PARTY = `fragment Party on Party {
  __typename
  ... on User { id login displayName }
  ... on Group { id name displayName }
}`;

export const CARD = `fragment Card on WorkflowItem {
  id displayName amount amountType currency dueDate status
  assignee { ...Party }
  subproject { id }
  case { id status version state { shortName prettyName } }
}`;

export const ACTIVITY = `fragment Activity on Activity {
  id seq at kind action comment
  actor { id login displayName }
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

export const LIVE_NOTIFICATIONS = `subscription LiveNotifications {
  notifications { id level createdAt readAt activity { id kind action workflowItem { id displayName } } }
}`;

export const LOGIN = `mutation Login($login: String!, $password: String!) {
  login(input: {login: $login, password: $password}) {
    token user { id login displayName }
    userErrors { code message field }
  }
}`;

export const LOGOUT = `mutation Logout { logout { revokedTokens userErrors { code message } } }`;

export const VIEWER = `query Viewer { viewer { id login displayName admin } }`;

export const PROJECTS = `query Projects {
  projects(first: 100) {
    totalCount
    edges { node {
      id displayName description status tags
      subprojects(first: 100) {
        totalCount
        edges { node { id displayName currency status workflow { prettyName } } }
      }
    } }
  }
}`;

export const BOARD = `query Board($id: ID!, $after: String) {
  node(id: $id) {
    ... on Subproject {
      id displayName currency status allowedIntents workflowMode
      project { id displayName }
      workflow { id prettyName states { shortName prettyName terminal } }
      workflowItems(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        edges { node { ...Card } }
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
  id seq at kind action comment actor { id login displayName }
}`;

export const ITEM = `query Item($id: ID!) {
  node(id: $id) {
    ... on WorkflowItem {
      ...Card
      description tags billingDate exchangeRate rejectReason createdAt allowedIntents
      subproject { id displayName project { id displayName } }
      case {
        id status version suspendedUntil
        state { shortName prettyName }
        workflow { id prettyName version diagram }
        roles { role { shortName prettyName } assignees { ...Party } pickList { ...Party } }
        myActions {
          id fireAt
          action { shortName prettyName outputs { name newState } resolutions { code prettyName } }
        }
      }
    }
  }
}
${CARD}
${PARTY}`;

export const HISTORY = `query History($id: ID!, $after: String) {
  node(id: $id) {
    ... on WorkflowItem {
      history(first: 20, after: $after) {
        totalCount
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
    case { id status version state { shortName prettyName } }
    userErrors { code message field }
  }
}`;

export const REASSIGN = `mutation Reassign($input: ReassignRoleInput!) {
  reassignRole(input: $input) { case { id } userErrors { code message field } }
}`;

export const TASKS = `query Tasks {
  myTasks(first: 100) {
    totalCount
    edges { node {
      id fireAt enabledAt
      action { shortName prettyName }
      case { id state { prettyName } workflowItem { id displayName dueDate subproject { id displayName } } }
    } }
  }
}`;

export const NOTIFICATIONS = `query Notifications {
  notifications(first: 20) {
    unreadCount
    edges { node { id level createdAt readAt activity { id kind action workflowItem { id displayName } } } }
  }
}`;

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
