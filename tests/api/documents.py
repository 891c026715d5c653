"""GraphQL documents shared by the API tests (Saleor's module-constant style)."""

LOGIN = """mutation($login: String!, $password: String!) {
  login(input: {login: $login, password: $password}) { token user { login } userErrors { code message field } } }"""

CREATE_USER = """mutation($input: CreateUserInput!) {
  createUser(input: $input) { user { id login } userErrors { code message field } } }"""

CREATE_GROUP = """mutation($name: String!) {
  createGroup(input: {name: $name}) { group { id name } userErrors { code message } } }"""

ADD_MEMBER = """mutation($g: ID!, $u: ID!) {
  addGroupMember(input: {groupId: $g, userId: $u}) { group { id members { login } } userErrors { code } } }"""

CREATE_PROJECT = """mutation($input: CreateProjectInput!) {
  createProject(input: $input) {
    project { id displayName status tags projectedBudgets { organization currency value } allowedIntents }
    userErrors { code message field } } }"""

UPDATE_PROJECT = """mutation($input: UpdateResourceInput!) {
  updateProject(input: $input) { project { id displayName description } userErrors { code message field } } }"""

CLOSE_PROJECT = (
    """mutation($id: ID!) { closeProject(input: {id: $id}) { project { status } userErrors { code message } } }"""
)

CLOSE_SUBPROJECT = """mutation($id: ID!) {
  closeSubproject(input: {id: $id}) { subproject { status } userErrors { code message } } }"""

CREATE_SUBPROJECT = """mutation($input: CreateSubprojectInput!) {
  createSubproject(input: $input) { subproject { id displayName currency workflow { shortName version } }
    userErrors { code message field } } }"""

CREATE_ITEM = """mutation($input: CreateWorkflowItemInput!) {
  createWorkflowItem(input: $input) {
    workflowItem { id displayName status amount amountType currency exchangeRate
      case { id status version state { shortName } } }
    userErrors { code message field } } }"""

REORDER = """mutation($s: ID!, $ordering: [ID!]!) {
  reorderWorkflowItems(input: {subprojectId: $s, ordering: $ordering}) {
    subproject { workflowItemOrdering } userErrors { code message field } } }"""

GRANT = """mutation($r: ID!, $i: String!, $p: ID!) {
  grantPermission(input: {resourceId: $r, intent: $i, partyId: $p}) {
    permissions { intent parties { ... on User { login } ... on Group { name } } } userErrors { code message } } }"""

REVOKE = """mutation($r: ID!, $i: String!, $p: ID!) {
  revokePermission(input: {resourceId: $r, intent: $i, partyId: $p}) {
    permissions { intent } userErrors { code message } } }"""

ITEMS = """query($s: ID!, $first: Int, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: $first, after: $after) { totalCount edges { cursor node { displayName } }
    pageInfo { hasNextPage endCursor } } } } }"""

TREE = """{ projects { totalCount edges { node { displayName
  subprojects { totalCount edges { node { displayName
    workflowItems { totalCount edges { node { displayName assignee { ... on User { login } } } } } } } } } } } }"""

HISTORY = """query($id: ID!, $first: Int, $after: String, $filter: HistoryFilter) { node(id: $id) {
  ... on Project { history(first: $first, after: $after, filter: $filter) {
    totalCount edges { cursor node { kind seq actor { login } data } } pageInfo { hasNextPage endCursor } } } } }"""

EXECUTE = """mutation($input: ExecuteActionInput!) {
  executeAction(input: $input) {
    case { id status version state { shortName } enabledActions { action { shortName } } }
    activity { seq kind action comment data actor { login } }
    preview { state { shortName } status version enabledActions { shortName } }
    replayed userErrors { code message field } } }"""

CASE = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { status case {
  id status version state { shortName }
  enabledActions { id action { shortName } assignees { ... on User { login } ... on Group { name } } }
  myActions { action { shortName } }
  roles { role { shortName } assignees { ... on User { login } ... on Group { name } } }
  log { totalCount edges { node { kind action comment data } } } } } } }"""

REASSIGN = """mutation($input: ReassignRoleInput!) {
  reassignRole(input: $input) { case { version roles { role { shortName } assignees { ... on User { login } } } }
    userErrors { code message field } } }"""

DEFINE = """mutation($spec: JSON!) {
  defineWorkflow(input: {spec: $spec}) { workflow { id shortName version spec } userErrors { code message field } } }"""

MY_TASKS = """{ myTasks { totalCount edges { node { action { shortName } case { id } } } } }"""
