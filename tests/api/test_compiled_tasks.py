"""``myTasks`` compiled (resolvers/compiled/tasks.py, actions.py) answers exactly what its
resolvers answer (resolvers/cases.py ``my_tasks``, resolvers/due_dates.py), byte for byte, for
every viewer of the authorization matrix, in both orders, page by page.

The scene is the matrix's, with a workflow of its own whose actions leave the spec's defaults
out (no pretty name, outputs, resolutions without a pretty name, documents attached, a timeout)
and whose parent action runs a child workflow (its task is an action two scopes down). Its
items are assigned to the actors: the admin has tasks of their own (an admin's task list is
theirs, not everyone's), the viewer through the group they join, the player directly, and the
stranger the victim's, lent by a deputyship active now; their due dates are past (overdue),
today, to come, or none.
"""

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from engine.cases import task_index
from engine.clock import SYSTEM_CLOCK, SettableClock
from models import Case, EnabledAction, WorkflowItem
from tests.api import test_authorization_matrix as matrix
from tests.fixtures import authorization_scene
from tests.fixtures.authorization import ACTORS, Scene
from tests.fixtures.documents import ADD_MEMBER, CREATE_ITEM, CREATE_SUBPROJECT, DEFINE, SET_DEPUTY

actors = matrix.actors  # the matrix's users (a fixture), one per actor


async def touch_item(session, item_id):
    """A due date written past the engine (in the past, and without reminders): the rows of the
    item's tasks carry it (engine/cases/task_index.py), so they are settled again at commit."""
    task_index.touch(session, [await session.scalar(select(Case.id).where(Case.object_id == item_id))])


FIELDS = """id fireAt enabledAt dueDate overdue __typename
  onBehalfOf { __typename ... on User { id login displayName } ... on Group { id name displayName } }
  assignees { __typename ... on User { login } ... on Group { name } }
  action { shortName prettyName prettyPastTense newState attachDocuments assignedRole trigger timeoutSeconds
    alwaysEnabled allowedRoles privileges enabledStates assignedStates __typename
    outputs { name newState __typename } resolutions { code prettyName __typename } }
  case { id status version createdAt state { shortName prettyName terminal } }"""

TASKS = f"""query Tasks($first: Int, $after: String, $order: TaskOrder) {{
  myTasks(first: $first, after: $after, orderBy: $order) {{
    totalCount pageInfo {{ hasNextPage endCursor __typename }} __typename
    edges {{ cursor __typename node {{ {FIELDS} }} }} }} }}"""
UNCOUNTED = """query Bare($first: Int, $after: String, $order: TaskOrder) {
  myTasks(first: $first, after: $after, orderBy: $order) { edges { cursor node { id action { shortName } } } } }"""
BY_DUE = f"""query ByDue($first: Int, $after: String) {{ myTasks(first: $first, after: $after, orderBy: DUE_DATE) {{
  totalCount pageInfo {{ hasNextPage endCursor }} edges {{ cursor node {{ {FIELDS} }} }} }} }}"""
# The web dashboard's (web/src/api/documents.js TASKS) without the fields others compile
# (case.workflow, case.workflowItem): compiled, one statement.
DASHBOARD = """query Tasks { myTasks(first: 100, orderBy: DUE_DATE) { pageInfo { hasNextPage } totalCount
  edges { node { id fireAt enabledAt dueDate overdue
    onBehalfOf { ... on User { id displayName } ... on Group { id displayName } }
    action { shortName prettyName newState attachDocuments outputs { name newState } resolutions { code prettyName } }
    case { id version state { prettyName } } } } } }"""


def flow(short_name: str) -> dict:
    """Actions with the spec's defaults left out, and a task two scopes down (``look``)."""
    return {
        "short_name": short_name,
        "roles": {"worker": {"callbacks": ["item_assignee"]}, "lead": {"callbacks": ["creation_user"]}},
        "states": {"open": {}, "checked": {"pretty_name": "Checked"}, "done": {"terminal": True}},
        "actions": {
            "start": {"trigger": "init", "new_state": "open"},
            "check": {
                "assigned_role": "worker",
                "assigned_states": ["open"],
                "outputs": {"good": "checked", "bad": "done"},
                "attach_documents": True,
                "resolutions": {"ok": None, "meh": "Meh"},
            },
            "sign": {
                "pretty_name": "Sign off",
                "assigned_role": "worker",
                "assigned_states": ["open", "checked"],
                "allowed_roles": ["lead"],
                "privileges": ["workflowItem.view"],
                "new_state": "done",
                "timeout_seconds": 86400,
            },
            "review": {
                "trigger": "parallel",
                "enabled_states": ["open"],
                "allowed_roles": ["lead"],
                "children": {
                    "inner": {
                        "trigger": "workflow",
                        "states": {"in_open": {}, "in_done": {"terminal": True}},
                        "children": {
                            "in_start": {"trigger": "init", "new_state": "in_open"},
                            "look": {
                                "pretty_past_tense": "Looked",
                                "assigned_role": "worker",
                                "assigned_states": ["in_open"],
                                "new_state": "in_done",
                            },
                        },
                    }
                },
            },
        },
    }


async def _ok(gql, document, variables, token):
    (payload,) = (await gql(document, variables, token=token)).values()
    assert payload.get("userErrors", []) == [], payload
    return payload


async def task_scene(gql, db, ids):
    """The matrix's scene with tasks for every actor (see the module's docstring)."""
    scene = await matrix.build_scene(gql, db, ids)
    owner, admin = scene.tokens["owner"], scene.tokens["admin"]
    name = Scene.unique("tasks")
    await _ok(gql, DEFINE, {"spec": flow(name)}, admin)
    sub_input = {"projectId": scene.project, "displayName": "T", "currency": "EUR", "workflow": name}
    sub = (await _ok(gql, CREATE_SUBPROJECT, {"input": sub_input}, owner))["subproject"]["id"]
    today = datetime.now(UTC).date()
    items = {}
    plan = [
        ("admin", ids["admin"], today - timedelta(days=3)),
        ("admin2", ids["admin"], None),
        ("player", ids["player"], today),
        ("group", scene.group, today - timedelta(days=1)),
        ("victim", ids["victim"], today + timedelta(days=5)),
        ("viewer", ids["viewer"], None),
    ]
    for label, assignee, due in plan:
        made = await _ok(
            gql, CREATE_ITEM, {"input": {"subprojectId": sub, "displayName": label, "assigneeId": assignee}}, owner
        )
        items[label] = made["workflowItem"]["id"]
        async with db.transaction() as s:
            await s.execute(update(WorkflowItem).where(WorkflowItem.id == items[label]).values(due_date=due))
            await touch_item(s, items[label])
    await _ok(gql, ADD_MEMBER, {"g": scene.group, "u": ids["viewer"]}, admin)
    # the stranger is in the group too: the group's tasks are its own, not lent by the victim
    await _ok(gql, ADD_MEMBER, {"g": scene.group, "u": ids["stranger"]}, admin)
    until = (datetime.now(UTC) + timedelta(hours=12)).isoformat()
    # the stranger stands in for the victim, the admin for the victim and the viewer: the
    # group's tasks are lent to the admin by both, and marked with the first of them (by id)
    for absent, deputy in (("victim", "stranger"), ("victim", "admin"), ("viewer", "admin")):
        await _ok(gql, SET_DEPUTY, {"input": {"userId": ids[absent], "deputyId": ids[deputy], "until": until}}, admin)
    scene.extra["items"] = items
    # Fresh tokens: the two servers of ``same`` share ``db``, whose publisher (the one that
    # clears remembered actors when a membership changes) is the last server's, so the planner's
    # server would go on with the stranger as it was before joining the group.
    scene.tokens = {actor: await authorization_scene._token(db, ids[actor]) for actor in ACTORS}
    return scene


def _listed(body):
    """(item's case id, action, lent by) of each task of a myTasks page."""
    return [
        (e["node"]["case"]["id"], e["node"]["action"]["shortName"], (e["node"]["onBehalfOf"] or {}).get("login"))
        for e in body["data"]["myTasks"]["edges"]
    ]


async def _walk(same, document, variables, token, first):
    """Every page of ``document``, each after the one before: the ids in order."""
    ids, after = [], None
    for _ in range(20):
        body = await same(document, {**variables, "first": first, "after": after}, token)
        tasks = body["data"]["myTasks"]
        ids += [e["cursor"] for e in tasks["edges"]]
        assert [e["node"]["id"] for e in tasks["edges"]] == ids[len(ids) - len(tasks["edges"]) :]
        if not tasks["pageInfo"]["hasNextPage"]:
            return ids
        assert tasks["pageInfo"]["endCursor"] == ids[-1]
        after = tasks["pageInfo"]["endCursor"]
    raise AssertionError("more than 20 pages")


async def test_my_tasks_compiled_answer_the_same_for_every_viewer_in_both_orders(gql, db, actors, same):
    scene = await task_scene(gql, db, actors)
    items = scene.extra["items"]
    seen = {}
    for actor in ACTORS:
        token = scene.tokens[actor]
        for order in (None, "ENABLED", "DUE_DATE"):
            whole = await same(TASKS, {"first": 100, "order": order}, token)
            assert whole["data"]["myTasks"]["totalCount"] == len(whole["data"]["myTasks"]["edges"])
            await same(TASKS, {"order": order}, token)  # first: the default
            await same(UNCOUNTED, {"first": 3, "order": order}, token)
            for first in (1, 2, 5):
                walked = await _walk(same, TASKS, {"order": order}, token, first)
                assert walked == [e["cursor"] for e in whole["data"]["myTasks"]["edges"]], (actor, order, first)
            seen[actor, order] = whole
        by_due = await same(BY_DUE, {"first": 100}, token)
        assert _listed(by_due) == _listed(seen[actor, "DUE_DATE"])
    cases = {}
    for label, item in items.items():
        found = await gql(
            "query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { id } } } }",
            {"id": item},
            token=scene.tokens["owner"],
        )
        cases[found["node"]["case"]["id"]] = label
    three = ["check", "sign", "look"]  # each item's tasks: its actions, the last two scopes down

    def labelled(actor, order):
        return [(cases.get(case, "bug"), action, lent) for case, action, lent in _listed(seen[actor, order])]

    assert labelled("owner", None) == []
    # an admin's task list is theirs: their own two items', and those lent to them, nobody else's
    first_absent = min((actors["victim"], "victim"), (actors["viewer"], "viewer"))[1]
    assert labelled("admin", None) == [
        *((label, a, None) for label in ("admin", "admin2") for a in three),
        *(("group", a, first_absent) for a in three),
        *(("victim", a, "victim") for a in three),
        *(("viewer", a, "viewer") for a in three),
    ]
    assert labelled("viewer", None) == [(label, a, None) for label in ("group", "viewer") for a in three]
    assert labelled("player", None) == [("bug", "resolve", None), *(("player", a, None) for a in three)]
    # the stranger's own (through the group) and the victim's, lent by the deputyship
    assert labelled("stranger", None) == [
        *(("group", a, None) for a in three),
        *(("victim", a, "victim") for a in three),
    ]
    # soonest due first (the admin's overdue item before its undated one), those without last
    assert labelled("admin", "DUE_DATE") == [
        *(("admin", a, None) for a in three),
        *(("group", a, first_absent) for a in three),
        *(("victim", a, "victim") for a in three),
        *(("admin2", a, None) for a in three),
        *(("viewer", a, "viewer") for a in three),
    ]
    assert labelled("viewer", "DUE_DATE") == labelled("viewer", None)
    assert labelled("player", "DUE_DATE") == labelled("player", None)[1:] + labelled("player", None)[:1]
    marks = {
        (cases.get(e["node"]["case"]["id"], "bug"), e["node"]["dueDate"] is not None, e["node"]["overdue"])
        for actor in ACTORS
        for e in seen[actor, "DUE_DATE"]["data"]["myTasks"]["edges"]
    }
    assert marks == {
        ("admin", True, True),
        ("admin2", False, False),
        ("group", True, True),
        ("player", True, False),  # due today: not overdue until the day is over
        ("victim", True, False),
        ("viewer", False, False),
        ("bug", False, False),
    }
    task = seen["player", None]["data"]["myTasks"]["edges"][1]["node"]  # check, with the spec's defaults
    assert task["action"] == {
        "shortName": "check",
        "prettyName": "check",
        "prettyPastTense": "check",
        "newState": None,
        "attachDocuments": True,
        "assignedRole": "worker",
        "trigger": "USER",
        "timeoutSeconds": None,
        "alwaysEnabled": False,
        "allowedRoles": [],
        "privileges": [],
        "enabledStates": [],
        "assignedStates": ["open"],
        "__typename": "Action",
        "outputs": [
            {"name": "good", "newState": "checked", "__typename": "ActionOutput"},
            {"name": "bad", "newState": "done", "__typename": "ActionOutput"},
        ],
        "resolutions": [
            {"code": "ok", "prettyName": "ok", "__typename": "Resolution"},
            {"code": "meh", "prettyName": "Meh", "__typename": "Resolution"},
        ],
    }
    sign, look = (seen["player", None]["data"]["myTasks"]["edges"][i]["node"] for i in (2, 3))
    assert sign["fireAt"] is not None and task["fireAt"] is None  # sign's timeout
    assert (sign["action"]["prettyPastTense"], sign["action"]["timeoutSeconds"]) == ("Sign off", 86400)
    assert look["action"]["prettyPastTense"] == "Looked" and look["action"]["newState"] == "in_done"


async def test_refused_arguments_are_refused_as_the_resolvers_refuse_them(gql, db, actors, same):
    """A bad cursor, ``first`` out of range: the resolvers' errors; a cursor of no task of
    the viewer's (or of nothing): the tasks past it."""
    scene = await task_scene(gql, db, actors)
    for actor in ("admin", "stranger", "owner"):
        token = scene.tokens[actor]
        for order in (None, "DUE_DATE"):
            for variables in ({"after": "bogus"}, {"after": ""}, {"first": 101}, {"first": -1}):
                body = await same(TASKS, {"order": order, **variables}, token)
                assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT", body
            for first in (0, 100):
                await same(TASKS, {"order": order, "first": first}, token)
            empty = await same(TASKS, {"order": order, "first": 0}, token)
            assert empty["data"]["myTasks"]["edges"] == [] and empty["data"]["myTasks"]["pageInfo"]["endCursor"] is None
            for after in ("ea_01ZZZZZZZZZZZZZZZZZZZZZZZZ", "ea_00000000000000000000000000", scene.case):
                await same(TASKS, {"order": order, "first": 2, "after": after}, token)


async def test_a_compiled_task_list_is_one_statement_that_asks_the_time_each_run(
    gql, db, actors, same, count_statements, monkeypatch
):
    """One statement per myTasks, kept and run again: the instant a deputyship is judged at and
    the day overdue is judged by are parameters of each run, never frozen into the statement."""
    scene = await task_scene(gql, db, actors)
    stranger, player = scene.tokens["stranger"], scene.tokens["player"]
    for document, variables in ((TASKS, {"first": 5}), (BY_DUE, {"first": 5}), (UNCOUNTED, {}), (DASHBOARD, {})):
        for token in (stranger, scene.tokens["admin"]):
            await same(document, variables, token)
            await gql.raw(document, variables, token=token)  # the token's actor freshly cached
            with count_statements() as compiled:
                await gql.raw(document, variables, token=token)
            assert compiled.count == 1, compiled.statements
            # PostgreSQL plans it once for any parameters (its custom plans took 50-270 ms to
            # make at 1M items, bench R6), for this statement only: the setting is set back
            generic = ["SET LOCAL plan_cache_mode = force_generic_plan", "SET LOCAL plan_cache_mode = DEFAULT"]
            assert compiled.settings == ([] if db.is_sqlite else generic)
    before = _listed(await same(TASKS, {"first": 100}, stranger))
    assert [lent for _, _, lent in before].count("victim") == 3
    due = await same(BY_DUE, {"first": 100}, player)
    assert [e["node"]["overdue"] for e in due["data"]["myTasks"]["edges"]] == [False] * 4
    later = datetime.now(UTC) + timedelta(days=1)  # the deputyship has ended, today's due date passed
    monkeypatch.setattr(SYSTEM_CLOCK, "now", SettableClock(later).now)  # the one clock (engine/clock.py)
    after = _listed(await same(TASKS, {"first": 100}, stranger))
    assert after == [task for task in before if task[2] is None]
    due = await same(BY_DUE, {"first": 100}, player)
    assert [e["node"]["overdue"] for e in due["data"]["myTasks"]["edges"]] == [True, True, True, False]


# EnabledAction's fields outside myTasks: read from the enabled_action row, its spec looked up
ACTIONS_OF = f"""query Actions($id: ID!) {{ node(id: $id) {{ ... on WorkflowItem {{ id case {{ id
  enabledActions {{ {FIELDS.split("case {")[0]} }} }} }} }} }}"""
TREE_ACTIONS = """query Tree($id: ID!) { node(id: $id) { ... on Project { subprojects { edges { node {
  workflowItems { edges { node { displayName case { enabledActions { id fireAt dueDate overdue
    onBehalfOf { __typename } action { shortName prettyName newState attachDocuments
      outputs { name newState } resolutions { code prettyName } } } } } } } } } } } } }"""


async def test_enabled_actions_outside_my_tasks_answer_the_same(gql, db, actors, same, count_statements):
    """A case's enabledActions read the same fields from the instance's own row: the action's
    body looked up in the spec's actions, the due date through the case, no onBehalfOf."""
    scene = await task_scene(gql, db, actors)
    items = scene.extra["items"]
    for actor in ACTORS:
        token = scene.tokens[actor]
        for item in (items["admin"], items["player"], items["viewer"], scene.item, scene.suspended_item):
            body = await same(ACTIONS_OF, {"id": item}, token)
            if actor == "owner" and item == items["admin"]:
                actions = {ea["action"]["shortName"]: ea for ea in body["data"]["node"]["case"]["enabledActions"]}
                assert set(actions) == {"check", "sign", "look"}
                assert actions["check"]["overdue"] is True and actions["check"]["onBehalfOf"] is None
                assert actions["look"]["action"]["prettyPastTense"] == "Looked"
                assert [o["name"] for o in actions["check"]["action"]["outputs"]] == ["good", "bad"]
        await same(TREE_ACTIONS, {"id": scene.project}, token)
    with count_statements() as compiled:
        await gql.raw(ACTIONS_OF, {"id": items["admin"]}, token=scene.tokens["owner"])
    assert compiled.count == 1, compiled.statements


HIDDEN_DUE = """query Hidden($order: TaskOrder) { myTasks(first: 10, orderBy: $order) {
  edges { node { id dueDate overdue action { shortName } case { enabledActions { id dueDate overdue } } } } } }"""
DUE_OUTSIDE = """query Due($id: ID!) { node(id: $id) { ... on WorkflowItem {
  case { enabledActions { id dueDate overdue } timers { id dueDate } } } } }"""


async def test_a_task_on_an_item_its_assignee_may_not_see_tells_no_due_date(gql, db, actors, same):
    """A task assigned straight to a party that holds no grant and plays no role in its case
    (hidden ≡ missing): listed (the task index lists what is assigned to you), but its item's
    due date is none and it is not overdue, in both orders, on both roads; and the item's
    owner still reads the date."""
    scene = await matrix.build_scene(gql, db, actors)
    past = datetime.now(UTC).date() - timedelta(days=2)
    async with db.transaction() as s:
        await s.execute(update(WorkflowItem).where(WorkflowItem.id == scene.item).values(due_date=past))
        await touch_item(s, scene.item)
        instance = await s.scalar(
            select(EnabledAction).where(
                EnabledAction.case_id == scene.case, EnabledAction.status == "ENABLED", EnabledAction.trigger == "user"
            )
        )
        instance.assignee_party_id = actors["stranger"]  # through the ORM: the task index follows
    for order in (None, "DUE_DATE"):
        body = await same(HIDDEN_DUE, {"order": order}, scene.tokens["stranger"])
        (edge,) = body["data"]["myTasks"]["edges"]
        node = edge["node"]
        assert (node["id"], node["dueDate"], node["overdue"]) == (instance.id, None, False)
        assert node["case"] is None  # its case is hidden with its item (issue 46)
    owned = await same(DUE_OUTSIDE, {"id": scene.item}, scene.tokens["owner"])
    listed = {ea["id"]: ea for ea in owned["data"]["node"]["case"]["enabledActions"]}
    assert listed[instance.id]["dueDate"] == past.isoformat() and listed[instance.id]["overdue"] is True
    await same(DUE_OUTSIDE, {"id": scene.item}, scene.tokens["player"])


HIDDEN_CASE = """query { myTasks(first: 10) { edges { node { id action { shortName }
  case { id status state { shortName } roles { role { shortName } assignees { __typename } } } } } } }"""
CASE_OF_ITEM = """query Case($id: ID!) { node(id: $id) { ... on WorkflowItem { case { id } } } }"""


async def test_a_task_on_an_item_its_assignee_may_not_see_shows_no_case(gql, db, actors, same, count_statements):
    """Issue 46: a task assigned straight to a party without a grant or a role (hidden ≡
    missing) showed its case's status, state and role players while its item was hidden. Its
    case is null, on both roads, in one statement on the compiled one; the item's owner still
    reads the case through the task's item."""
    scene = await matrix.build_scene(gql, db, actors)
    async with db.transaction() as s:
        instance = await s.scalar(
            select(EnabledAction).where(
                EnabledAction.case_id == scene.case, EnabledAction.status == "ENABLED", EnabledAction.trigger == "user"
            )
        )
        instance.assignee_party_id = actors["stranger"]  # through the ORM: the task index follows
    body = await same(HIDDEN_CASE, None, scene.tokens["stranger"])  # the token is remembered from now on
    with count_statements() as compiled:
        await gql.raw(HIDDEN_CASE, token=scene.tokens["stranger"])
    (edge,) = body["data"]["myTasks"]["edges"]
    assert (edge["node"]["id"], edge["node"]["case"]) == (instance.id, None)
    assert compiled.count == 1, compiled.statements
    owned = await same(CASE_OF_ITEM, {"id": scene.item}, scene.tokens["owner"])
    assert owned["data"]["node"]["case"]["id"] == scene.case
