"""Pick lists read in one statement for a whole page (issue 19, finding 8), and task lists that
leave out what cannot run (issue 20, point 3): over HTTP, on both databases."""

from collections import Counter

from tests.fixtures.builders import bug_item, build_tree, mutate
from tests.fixtures.documents import CANCEL, CREATE_ITEM, CREATE_SUBPROJECT, DEFINE, EXECUTE, MY_TASKS, RESUME, SUSPEND

PAGE_PICKS = """query($s: ID!, $first: Int) { node(id: $s) { ... on Subproject { workflowItems(first: $first) {
  edges { node { displayName case { roles { role { shortName } pickList { ... on User { login } } } } } } } } } }"""

CASE_ACTIONS = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { id status
  enabledActions { action { shortName } } myActions { action { shortName } } } } } }"""


def triage_spec(allowed):
    """Two roles, so the lists of one case differ by role; the fixer role also names allowed
    parties, which follow the players."""
    return {
        "short_name": "triage",
        "roles": {"reporter": {}, "fixer": {"allowed_parties": allowed}},
        "states": {"open": {}, "closed": {"terminal": True}},
        "actions": {
            "note": {"allowed_roles": ["reporter", "fixer"], "always_enabled": True},
            "close": {"allowed_roles": ["fixer"], "enabled_states": ["open"], "new_state": "closed"},
        },
    }


# Who plays which role in each item, in creation (= page) order: the counts differ per role and,
# as a case's own players do not count for it, per case.
CAST = [
    ("I0", ["a"], ["b"]),
    ("I1", ["a"], ["c"]),
    ("I2", ["a"], ["b"]),
    ("I3", ["d"], ["b"]),
    ("I4", ["a", "e"], ["c"]),
    ("I5", ["d"], ["e"]),
]


def expected(ids, item, role, allowed):
    """The rule, written plainly: players of the role in the other cases, most often first
    (ties by party id), then the allowed parties not named yet."""
    column = 1 if role == "reporter" else 2
    counts = Counter(p for cast in CAST if cast[0] != item for p in cast[column])
    order = sorted(counts, key=lambda login: (-counts[login], ids[login]))
    return order + [p for p in (allowed if role == "fixer" else []) if p not in order]


async def test_pick_lists_of_a_page_cost_one_statement_and_differ_per_case_and_role(gql, make_user, count_statements):
    _, root = await make_user("root", admin=True)
    _, sam = await make_user("sam")
    ids = {login: (await make_user(login))[0] for login in "abcdef"}
    allowed = ["f", "e", "c", "b"]  # f plays nowhere: the lists end with it
    defined = await gql(DEFINE, {"spec": triage_spec([ids[p] for p in allowed])}, token=root)
    assert defined["defineWorkflow"]["userErrors"] == []
    project, _, _ = await build_tree(gql, sam, items=0)
    sub_input = {"projectId": project["id"], "displayName": "Triage", "currency": "EUR", "workflow": "triage"}
    sub = (await gql(CREATE_SUBPROJECT, {"input": sub_input}, token=sam))["createSubproject"]["subproject"]
    for name, reporters, fixers in CAST:
        assignments = [
            {"role": "reporter", "partyIds": [ids[p] for p in reporters]},
            {"role": "fixer", "partyIds": [ids[p] for p in fixers]},
        ]
        item = {"subprojectId": sub["id"], "displayName": name, "assignments": assignments}
        assert (await gql(CREATE_ITEM, {"input": item}, token=sam))["createWorkflowItem"]["userErrors"] == []

    await gql(PAGE_PICKS, {"s": sub["id"], "first": 1}, token=sam)  # the token is remembered from here on
    counts, lists = {}, {}
    for first in (2, 6):
        with count_statements() as counter:
            page = await gql(PAGE_PICKS, {"s": sub["id"], "first": first}, token=sam)
        counts[first] = counter.count
        for edge in page["node"]["workflowItems"]["edges"]:
            for role in edge["node"]["case"]["roles"]:
                picks = [p["login"] for p in role["pickList"]]
                lists[(edge["node"]["displayName"], role["role"]["shortName"])] = picks
    assert counts[2] == counts[6], counts
    assert len(lists) == 12
    for (item, role), picks in lists.items():
        assert picks == expected(ids, item, role, allowed), (item, role)
    # Spelled out where no tie decides: I0's own reporter a still counts 3 times elsewhere;
    # I5's fixer e played in I5 alone, so it comes with the allowed parties, not before c.
    assert lists[("I0", "reporter")] == ["a", "d", "e"]
    assert lists[("I5", "fixer")] == ["b", "c", "f", "e"]
    assert lists[("I5", "reporter")][0] == "a" and lists[("I0", "fixer")][-2:] == ["e", "f"]


async def test_a_case_that_cannot_run_lists_no_task(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    held = await bug_item(gql, sam, dev_id)
    other = await bug_item(gql, sam, dev_id)  # stays active throughout: a mix-up shows

    async def tasks():
        found = (await gql(MY_TASKS, token=dev))["myTasks"]
        cases = [e["node"]["case"]["id"] for e in found["edges"]]
        assert found["totalCount"] == len(cases)
        assert {e["node"]["action"]["shortName"] for e in found["edges"]} <= {"resolve"}
        return cases

    async def actions(item):
        case = (await gql(CASE_ACTIONS, {"id": item["id"]}, token=dev))["node"]["case"]
        names = ({a["action"]["shortName"] for a in case[f]} for f in ("enabledActions", "myActions"))
        return case["status"], *names

    held_case, other_case = held["case"]["id"], other["case"]["id"]
    assert sorted(await tasks()) == sorted([held_case, other_case])

    suspended = await mutate(gql, SUSPEND, sam, workflowItemId=held["id"])
    assert suspended["userErrors"] == []
    assert await tasks() == [other_case]
    # The suspended case keeps its enabled set (it resumes with it); none of it is yours to run now.
    assert await actions(held) == ("SUSPENDED", {"comment", "edit", "resolve"}, set())
    assert await actions(other) == ("ACTIVE", {"comment", "edit", "resolve"}, {"comment", "edit", "resolve"})

    assert (await mutate(gql, RESUME, sam, workflowItemId=held["id"]))["userErrors"] == []
    assert sorted(await tasks()) == sorted([held_case, other_case])
    assert (await actions(held))[2] == {"comment", "edit", "resolve"}

    assert (await mutate(gql, CANCEL, sam, workflowItemId=held["id"]))["userErrors"] == []
    assert await tasks() == [other_case]
    assert await actions(held) == ("CANCELED", set(), set())


async def test_a_completed_case_lists_the_task_that_can_reopen_it(gql, make_user):
    """COMPLETED is not final: an action may leave the terminal state, and executeAction runs
    it, so its assigned instance is a task."""
    _, root = await make_user("root", admin=True)
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    spec = {
        "short_name": "chore",
        "roles": {"worker": {"callbacks": ["item_assignee"]}},
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {
            "finish": {"assigned_role": "worker", "assigned_states": ["open"], "new_state": "done"},
            "redo": {"assigned_role": "worker", "assigned_states": ["done"], "new_state": "open"},
        },
    }
    assert (await gql(DEFINE, {"spec": spec}, token=root))["defineWorkflow"]["userErrors"] == []
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="chore")
    item = {"subprojectId": sub["id"], "displayName": "Sweep", "assigneeId": dev_id}
    item_id = (await gql(CREATE_ITEM, {"input": item}, token=sam))["createWorkflowItem"]["workflowItem"]["id"]

    async def task_names():
        found = (await gql(MY_TASKS, token=dev))["myTasks"]
        assert found["totalCount"] == len(found["edges"])
        return [e["node"]["action"]["shortName"] for e in found["edges"]]

    assert await task_names() == ["finish"]
    done = (await gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": "finish"}}, token=dev))["executeAction"]
    assert done["userErrors"] == [] and done["case"]["status"] == "COMPLETED"
    assert await task_names() == ["redo"]
    redone = (await gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": "redo"}}, token=dev))["executeAction"]
    assert redone["userErrors"] == [] and redone["case"]["status"] == "ACTIVE"
