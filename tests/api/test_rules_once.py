"""Issue 46, "each rule once": the rules both read roads share, at their edges, answered alike by
the compiled road and the resolvers (``same``: the bodies equal byte for byte), each read shown
to have compiled (the planner's outcomes in /metrics: none resolved, none fell back).

- the spec's defaults (engine/spec/defaults.py): a spec that names nothing but its keys;
- page order and cursors (resolvers/pagination.py): pages walked one cursor after another
  across rows that share their sort key (tasks due the same day, an item's tasks; listed and
  unlisted items; a log);
- the timestamp format (resolvers/timestamps.py): instants with no fraction, a fraction with
  leading zeros, six digits, and one given by a client with another offset.

tests/test_layers.py holds that no road writes one of them again."""

from datetime import UTC, date, datetime, timedelta, timezone

from sqlalchemy import select, text, update

from engine.cases import task_index
from models import Case, Project, WorkflowItem
from tests.fixtures.compiled import compiled_outcomes
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import (
    CREATE_ITEM,
    CREATE_PROJECT,
    CREATE_SUBPROJECT,
    DEFINE,
    EXECUTE,
    GRANT,
    REORDER,
    SUSPEND,
)


def bare(name: str) -> dict:
    """A spec that leaves out every default but one of each kind, so a road that answers the
    given value for the left-out one (or the other way round) shows."""
    return {
        "short_name": name,
        "roles": {"worker": {"callbacks": ["item_assignee"]}, "lead": {"pretty_name": "Team lead"}},
        "states": {"open": {}, "done": {"terminal": True}, "parked": {"pretty_name": "Parked", "terminal": True}},
        "actions": {
            "start": {"trigger": "init", "new_state": "open"},
            # no name at all: every name is the short name
            "poke": {"assigned_role": "worker", "assigned_states": ["open"], "resolutions": {"yes": None}},
            # a pretty name: the past tense is it
            "finish": {
                "pretty_name": "Finish up",
                "assigned_role": "worker",
                "assigned_states": ["open"],
                "new_state": "done",
                "attach_documents": True,
            },
            # a past tense alone: the pretty name is the short name
            "park": {
                "pretty_past_tense": "Parked it",
                "assigned_role": "worker",
                "assigned_states": ["open"],
                "new_state": "parked",
                "always_enabled": True,
            },
        },
    }


ACTION = "shortName prettyName prettyPastTense trigger alwaysEnabled attachDocuments resolutions { code prettyName }"
SPEC_DEFAULTS_READ = f"""query($id: ID!) {{ node(id: $id) {{ ... on WorkflowItem {{ dueDate createdAt case {{
  createdAt suspendedUntil
  state {{ shortName prettyName terminal }}
  roles {{ role {{ shortName prettyName }} }}
  enabledActions {{ enabledAt action {{ {ACTION} }} }}
  log {{ edges {{ cursor node {{ at title kind }} }} }}
  workflow {{ prettyName roles {{ shortName prettyName }} states {{ shortName prettyName terminal }}
    actions {{ {ACTION} }} }} }} }} }} }}"""
TASKS_BY_DUE_WALKED = """query($first: Int, $after: String) { myTasks(first: $first, after: $after, orderBy: DUE_DATE) {
  totalCount pageInfo { hasNextPage endCursor }
  edges { cursor node { id dueDate action { shortName prettyName } } } } }"""
ITEM_PAGE_WALKED = """query($s: ID!, $first: Int, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor }
    edges { cursor node { id displayName createdAt } } } } } }"""
LOG_PAGE_WALKED = """query($id: ID!, $first: Int, $after: String) { node(id: $id) { ... on WorkflowItem { case {
  log(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { seq kind } } }
  } } } }"""
PROJECT_INSTANTS = "{ projects(first: 100) { edges { node { id displayName createdAt } } } }"


async def _ok(gql, document, variables, token):
    (payload,) = (await gql(document, variables, token=token)).values()
    assert payload.get("userErrors", []) == [], payload
    return payload


async def compiled(same, document, variables, token):
    """``same``'s body, asserting the compiled road answered it (nothing resolved or fell back)."""
    before = compiled_outcomes()
    body = await same(document, variables, token)
    after = compiled_outcomes()
    assert "errors" not in body, body
    assert (after["resolved"], after["fell_back"]) == (before["resolved"], before["fell_back"]), document
    assert after["compiled"] > before["compiled"]
    return body


async def _scene(gql, db, make_user, items: int):
    """A project, a subproject on ``bare``'s workflow and ``items`` items assigned to the worker."""
    _, admin = await make_user("rules_admin", admin=True)
    worker_id, worker = await make_user("rules_worker")
    name = "bare_" + worker_id[-6:].lower()
    await _ok(gql, DEFINE, {"spec": bare(name)}, admin)
    project = (await _ok(gql, CREATE_PROJECT, {"input": {"displayName": "Rules"}}, admin))["project"]["id"]
    sub_input = {"projectId": project, "displayName": "Bare", "currency": "EUR", "workflow": name}
    sub = (await _ok(gql, CREATE_SUBPROJECT, {"input": sub_input}, admin))["subproject"]["id"]
    # the worker sees the subproject (and its items through their role in each case)
    await _ok(gql, GRANT, {"r": project, "i": "project.view", "p": worker_id}, admin)
    await _ok(gql, GRANT, {"r": sub, "i": "subproject.view", "p": worker_id}, admin)
    made = []
    for n in range(items):
        item_input = {"subprojectId": sub, "displayName": f"item {n}", "assigneeId": worker_id}
        made.append((await _ok(gql, CREATE_ITEM, {"input": item_input}, admin))["workflowItem"])
    return name, admin, worker, project, sub, made


async def test_a_spec_without_pretty_names_reads_its_defaults_alike_on_both_roads(gql, db, make_user, same):
    name, admin, worker, _, _, (item,) = await _scene(gql, db, make_user, 1)
    await _ok(gql, EXECUTE, {"input": {"caseId": item["case"]["id"], "action": "poke", "resolution": "yes"}}, worker)
    for token in (admin, worker):
        case = (await compiled(same, SPEC_DEFAULTS_READ, {"id": item["id"]}, token))["data"]["node"]["case"]
        assert case["state"] == {"shortName": "open", "prettyName": "open", "terminal": False}
        assert [r["role"] for r in case["roles"]] == [
            {"shortName": "worker", "prettyName": "worker"},
            {"shortName": "lead", "prettyName": "Team lead"},
        ]
        workflow = case["workflow"]
        assert workflow["prettyName"] == name
        assert workflow["roles"] == [
            {"shortName": "worker", "prettyName": "worker"},
            {"shortName": "lead", "prettyName": "Team lead"},
        ]
        assert workflow["states"] == [
            {"shortName": "open", "prettyName": "open", "terminal": False},
            {"shortName": "done", "prettyName": "done", "terminal": True},
            {"shortName": "parked", "prettyName": "Parked", "terminal": True},
        ]
        names = {a["shortName"]: a for a in workflow["actions"]}
        assert names["start"]["trigger"] == "INIT"
        assert {k: names["poke"][k] for k in ("prettyName", "prettyPastTense", "trigger", "resolutions")} == {
            "prettyName": "poke",
            "prettyPastTense": "poke",
            "trigger": "USER",
            "resolutions": [{"code": "yes", "prettyName": "yes"}],
        }
        assert (names["poke"]["alwaysEnabled"], names["poke"]["attachDocuments"]) == (False, False)
        finish, park = names["finish"], names["park"]
        assert (finish["prettyName"], finish["prettyPastTense"], finish["attachDocuments"]) == (
            "Finish up",
            "Finish up",
            True,
        )
        assert (park["prettyName"], park["prettyPastTense"], park["alwaysEnabled"]) == ("park", "Parked it", True)
        assert sorted(e["action"]["shortName"] for e in case["enabledActions"]) == ["finish", "park", "poke"]
        assert [e["action"] for e in case["enabledActions"] if e["action"]["shortName"] == "poke"] == [names["poke"]]
        # the log's titles of actions without names: the short name as the past tense
        titles = [e["node"]["title"] for e in case["log"]["edges"] if e["node"]["kind"] == "action_executed"]
        assert titles == ["start by rules_admin", "poke by rules_worker"], titles


async def _walk(same, document, variables, token, first, connection, cursor_of=lambda node: node["id"]):
    """Every page of ``document``'s connection, each after the one before (both roads, each
    compiled): the nodes in order, and the total it said. A cursor is its node's id (a log
    entry's: its seq)."""
    nodes, after, total = [], None, None
    for _ in range(40):
        body = await compiled(same, document, {**variables, "first": first, "after": after}, token)
        page = connection(body["data"])
        assert [e["cursor"] for e in page["edges"]] == [cursor_of(e["node"]) for e in page["edges"]]
        nodes += [e["node"] for e in page["edges"]]
        total = page["totalCount"]
        if not page["pageInfo"]["hasNextPage"]:
            return nodes, total
        assert page["pageInfo"]["endCursor"] == page["edges"][-1]["cursor"]
        after = page["pageInfo"]["endCursor"]
    raise AssertionError("more than 40 pages")


async def test_task_pages_by_due_date_go_on_across_tasks_due_the_same_day(gql, db, make_user, same):
    """Five items, three tasks each (so three tasks share each due date), two items due the same
    day, one due later, two with none: walked a page of 1, 2 and 4 at a time, each page after
    the cursor of the one before, the tasks come once each, by due date, ties by id, the undated
    last by id."""
    *_, worker, _, _, items = await _scene(gql, db, make_user, 5)
    day = date(2031, 3, 4)
    dues = [day, None, day, day + timedelta(days=1), None]
    async with db.transaction() as s:
        for item, due in zip(items, dues, strict=True):
            await s.execute(update(WorkflowItem).where(WorkflowItem.id == item["id"]).values(due_date=due))
            task_index.touch(s, [await s.scalar(select(Case.id).where(Case.object_id == item["id"]))])
    every = (await compiled(same, TASKS_BY_DUE_WALKED, {"first": 100}, worker))["data"]["myTasks"]
    expected = sorted(
        (e["node"] for e in every["edges"]), key=lambda t: (t["dueDate"] is None, t["dueDate"] or "", t["id"])
    )
    assert [e["node"] for e in every["edges"]] == expected
    assert [t["dueDate"] for t in expected] == ["2031-03-04"] * 6 + ["2031-03-05"] * 3 + [None] * 6
    for first in (1, 2, 4):
        walked, total = await _walk(same, TASKS_BY_DUE_WALKED, {}, worker, first, lambda data: data["myTasks"])
        assert (walked, total) == (expected, 15), first


async def test_item_pages_go_on_across_listed_and_unlisted_items(gql, db, make_user, same):
    """A subproject whose ordering lists three of six items out of creation order: walked a page
    at a time, the listed come first in the ordering's order, then the others by creation,
    whether the cursor is a listed item or not; a subproject without an ordering by creation."""
    _, admin, worker, _, sub, items = await _scene(gql, db, make_user, 6)
    ids = [item["id"] for item in items]
    whole = await compiled(same, ITEM_PAGE_WALKED, {"s": sub, "first": 100}, admin)
    created = [e["node"]["id"] for e in whole["data"]["node"]["workflowItems"]["edges"]]
    assert created == sorted(ids)
    for first in (1, 2, 3):
        walked, total = await _walk(
            same, ITEM_PAGE_WALKED, {"s": sub}, admin, first, lambda d: d["node"]["workflowItems"]
        )
        assert ([n["id"] for n in walked], total) == (created, 6)
    listed = [ids[4], ids[1], ids[3]]
    await _ok(gql, REORDER, {"s": sub, "ordering": listed}, admin)
    expected = listed + [i for i in sorted(ids) if i not in listed]
    for token in (admin, worker):
        for first in (1, 2, 4):
            walked, total = await _walk(
                same, ITEM_PAGE_WALKED, {"s": sub}, token, first, lambda d: d["node"]["workflowItems"]
            )
            assert ([n["id"] for n in walked], total) == (expected, 6), first


async def test_log_pages_go_on_by_seq(gql, db, make_user, same):
    *_, worker, _, _, (item,) = await _scene(gql, db, make_user, 1)
    poke = {"input": {"caseId": item["case"]["id"], "action": "poke", "resolution": "yes"}}
    for _ in range(3):
        await _ok(gql, EXECUTE, poke, worker)

    def log(data):
        return data["node"]["case"]["log"]

    whole = log((await compiled(same, LOG_PAGE_WALKED, {"id": item["id"], "first": 100}, worker))["data"])
    seqs = [e["node"]["seq"] for e in whole["edges"]]
    assert len(seqs) >= 4 and seqs == sorted(seqs)
    for first in (1, 3):
        walked, total = await _walk(
            same, LOG_PAGE_WALKED, {"id": item["id"]}, worker, first, log, lambda node: str(node["seq"])
        )
        assert ([n["seq"] for n in walked], total) == (seqs, len(seqs))


async def test_instants_read_alike_whatever_their_fraction_and_offset(gql, db, make_user, same):
    """Three projects whose creation instants have no fraction (one written by SQL itself, as a
    database's own clock would, without a fraction at all), a fraction with leading zeros, and
    six digits; a suspension until an instant a client gave with +02:00 and half a second."""
    _, admin, worker, project, _, (item,) = await _scene(gql, db, make_user, 1)
    instants = {
        "whole": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "leading": datetime(2026, 1, 2, 3, 4, 5, 100, tzinfo=UTC),
        "six": datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    }
    made = {}
    for label, at in instants.items():
        made[label] = (await _ok(gql, CREATE_PROJECT, {"input": {"displayName": label}}, admin))["project"]["id"]
        async with db.transaction() as s:
            await s.execute(update(Project).where(Project.id == made[label]).values(created_at=at))
    # written by SQL itself, as a constant: SQLite keeps the text as written, without a fraction
    written = "'2026-05-06 07:08:09+00'::timestamptz" if BACKEND == "postgres" else "'2026-05-06 07:08:09'"
    async with db.transaction() as s:
        await s.execute(text(f"UPDATE project SET created_at = {written} WHERE id = :id"), {"id": project})
    read = {
        e["node"]["id"]: e["node"]["createdAt"]
        for e in (await compiled(same, PROJECT_INSTANTS, {}, admin))["data"]["projects"]["edges"]
    }
    assert {label: read[made[label]] for label in instants} == {
        "whole": "2026-01-02T03:04:05+00:00",
        "leading": "2026-01-02T03:04:05.000100+00:00",
        "six": "2026-12-31T23:59:59.999999+00:00",
    }
    assert read[project] == "2026-05-06T07:08:09+00:00"
    offset = timezone(timedelta(hours=2))
    until = (datetime.now(offset) + timedelta(days=30)).replace(microsecond=500000)
    await _ok(gql, SUSPEND, {"input": {"caseId": item["case"]["id"], "until": until.isoformat()}}, admin)
    for token in (admin, worker):
        case = (await compiled(same, SPEC_DEFAULTS_READ, {"id": item["id"]}, token))["data"]["node"]["case"]
        assert case["suspendedUntil"] == until.astimezone(UTC).isoformat()
        assert case["suspendedUntil"].endswith(".500000+00:00")
