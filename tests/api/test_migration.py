"""Versions that move only when told (issue 37) over GraphQL: defining a version moves nothing,
migrateCases (dry run and real run, each refusal reason, batches, atomic per case, the task
index following), a migrated subproject's new items, and retireWorkflow."""

import asyncio
import copy

import engine
from engine.migration import migration
from resolvers.context import Context
from schema import schema
from server.hub import EventHub
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.conditions import wait_until
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, DEFINE, EXECUTE, GRANT, MY_TASKS
from tests.fixtures.specs import store_as_before
from tests.fixtures.versions import (
    DEFINE_VERSION_WITH_WARNINGS,
    MIGRATE_CASES,
    MIGRATED_CASE,
    PERMIT_V1,
    RETIRE_WORKFLOW,
    permit_v2,
)


async def define(gql, admin, spec):
    defined = (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]
    assert defined["userErrors"] == [], defined
    return defined["workflow"]


async def new_item(gql, token, subproject_id, name, **roles):
    assignments = [{"role": role, "partyIds": parties} for role, parties in roles.items()]
    made = await gql(
        CREATE_ITEM,
        {"input": {"subprojectId": subproject_id, "displayName": name, "assignments": assignments}},
        token=token,
    )
    return made["createWorkflowItem"]


async def case_of(gql, token, item_id):
    return (await gql(MIGRATED_CASE, {"id": item_id}, token=token))["node"]["case"]


async def submit(gql, token, item_id):
    done = await gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": "submit"}}, token=token)
    assert done["executeAction"]["userErrors"] == []


async def migrate(gql, token, **input):
    return (await gql(MIGRATE_CASES, {"input": {"workflow": "permit", "toVersion": 2} | input}, token=token))[
        "migrateCases"
    ]


async def permits(gql, make_user, *, submitted=2, drafts=1):
    """permit v1, a subproject on it with ``drafts`` items in draft and ``submitted`` in review
    (reviewed by ``rita``), then permit v2 defined."""
    _, admin = await make_user("root", admin=True)
    rita_id, rita = await make_user("rita")
    await define(gql, admin, PERMIT_V1)
    _, sub, _ = await build_tree(gql, admin, items=0, workflow="permit")
    items = []
    for n in range(drafts + submitted):
        item = (await new_item(gql, admin, sub["id"], f"Permit {n}", reviewer=[rita_id]))["workflowItem"]
        if n >= drafts:
            await submit(gql, admin, item["id"])
        items.append(item["id"])
    v2 = (await gql(DEFINE_VERSION_WITH_WARNINGS, {"spec": permit_v2()}, token=admin))["defineWorkflow"]
    stranded = [d["message"] for d in v2["diagnostics"] if d["code"] == "STRANDS_CASES"]
    warned = f"{submitted} running case(s) of earlier versions are in 'review', which version 2 lacks"
    assert v2["workflow"] == {"version": 2} and stranded == ([f"{warned} or cannot finish from."] if submitted else [])
    return admin, rita, sub["id"], items


def state_and_version(case):
    return case["state"]["shortName"], case["workflow"]["version"]


async def test_defining_a_version_moves_nothing_and_new_items_stay_on_the_subprojects_version(gql, make_user):
    admin, _, sub, (draft, *_) = await permits(gql, make_user)
    assert state_and_version(await case_of(gql, admin, draft)) == ("draft", 1)
    later = await new_item(gql, admin, sub, "Later")
    assert later["userErrors"] == [] and state_and_version(await case_of(gql, admin, later["workflowItem"]["id"])) == (
        "draft",
        1,
    )
    # A subproject created now takes the latest version.
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Other"}}, token=admin))["createProject"]
    fresh = await gql(
        CREATE_SUBPROJECT,
        {
            "input": {
                "projectId": project["project"]["id"],
                "displayName": "New",
                "currency": "EUR",
                "workflow": "permit",
            }
        },
        token=admin,
    )
    assert fresh["createSubproject"]["subproject"]["workflow"] == {"shortName": "permit", "version": 2}


async def test_defining_a_version_that_strands_running_cases_warns_with_their_count(gql, make_user):
    admin, _, _, _ = await permits(gql, make_user, submitted=2)  # v2 defined with two cases in review
    v3 = permit_v2()
    v3["states"]["limbo"] = {}
    v3["actions"]["park"] = {"allowed_roles": ["clerk"], "enabled_states": ["checking"], "new_state": "limbo"}
    v3["actions"]["unpark"] = {"allowed_roles": ["clerk"], "enabled_states": ["limbo"], "new_state": "checking"}
    defined = (await gql(DEFINE_VERSION_WITH_WARNINGS, {"spec": v3}, token=admin))["defineWorkflow"]
    assert defined["userErrors"] == [] and defined["workflow"] == {"version": 3}
    (warning,) = [d for d in defined["diagnostics"] if d["code"] == "STRANDS_CASES"]
    assert warning["severity"] == "WARNING" and warning["path"] == ["states"]
    assert warning["message"] == (
        "2 running case(s) of earlier versions are in 'review', which version 3 lacks or cannot finish from."
    )
    again = (await gql(DEFINE_VERSION_WITH_WARNINGS, {"spec": PERMIT_V1}, token=admin))["defineWorkflow"]
    assert again["workflow"] == {"version": 4}  # back to review: nothing stranded
    assert [d for d in again["diagnostics"] if d["code"] == "STRANDS_CASES"] == []


async def test_a_dry_run_reports_each_landing_state_and_changes_nothing(gql, make_user):
    admin, rita, sub, items = await permits(gql, make_user)
    before = [await case_of(gql, admin, item) for item in items]
    dry = await migrate(gql, admin, subprojectId=sub, stateMap=[{"from": "review", "to": "checking"}], dryRun=True)
    assert dry["userErrors"] == [] and (dry["migrated"], dry["refused"], dry["hasMore"]) == (0, 0, False)
    landing = {r["case"]["id"]: (r["fromState"], r["toState"], r["userErrors"]) for r in dry["results"]}
    assert landing == {
        before[0]["id"]: ("draft", "draft", []),
        before[1]["id"]: ("review", "checking", []),
        before[2]["id"]: ("review", "checking", []),
    }
    assert [await case_of(gql, admin, item) for item in items] == before
    tasks = sorted(e["node"]["action"]["shortName"] for e in (await gql(MY_TASKS, token=rita))["myTasks"]["edges"])
    assert tasks == ["decide", "decide", "reject", "reject"]


async def test_a_real_run_moves_each_case_logs_it_and_the_task_index_and_subproject_follow(gql, make_user):
    admin, rita, sub, (draft, first, second) = await permits(gql, make_user)
    timers = (await case_of(gql, admin, first))["timers"]
    moved = await migrate(gql, admin, subprojectId=sub, stateMap=[{"from": "review", "to": "checking"}])
    assert moved["userErrors"] == [] and (moved["migrated"], moved["refused"]) == (3, 0)
    assert moved["workflow"] == {"version": 2}
    case = await case_of(gql, admin, first)
    assert state_and_version(case) == ("checking", 2) and case["version"] == 2  # submitted, migrated
    assert sorted(e["action"]["shortName"] for e in case["enabledActions"]) == ["approve", "reject"]
    assert case["timers"] == timers and [t["action"]["shortName"] for t in timers] == ["expire"]  # KEEP
    (entry,) = [e["node"] for e in case["log"]["edges"] if e["node"]["kind"] == "case_migrated"]
    assert entry["actor"] == {"login": "root"}
    assert entry["data"] == {
        "fromVersion": 1,
        "toVersion": 2,
        "map": {"review": "checking"},
        "timers": "KEEP",
        "from": "review",
        "to": "checking",
        "scopes": {},
        "canceled": ["decide"],
        "enabled": ["approve"],
    }
    assert state_and_version(await case_of(gql, admin, draft)) == ("draft", 2)
    tasks = sorted(e["node"]["action"]["shortName"] for e in (await gql(MY_TASKS, token=rita))["myTasks"]["edges"])
    assert tasks == ["approve", "approve", "reject", "reject"]
    # The subproject's new items take version 2 now; its migrated cases run on it.
    later = (await new_item(gql, admin, sub, "Later"))["workflowItem"]["id"]
    assert state_and_version(await case_of(gql, admin, later)) == ("draft", 2)
    approved = await gql(EXECUTE, {"input": {"workflowItemId": second, "action": "approve"}}, token=rita)
    assert approved["executeAction"]["case"]["state"]["shortName"] == "approved"
    again = await migrate(gql, admin, subprojectId=sub)
    assert (again["migrated"], again["refused"], again["results"]) == (0, 0, [])  # nothing left on version 1


async def test_each_refusal_reason_is_given_per_case_and_the_others_move(gql, db, make_user):
    admin, _, sub, (draft, first, second) = await permits(gql, make_user)
    # No map: `review` is not in version 2.
    dry = await migrate(gql, admin, subprojectId=sub, dryRun=True)
    assert dry["refused"] == 2
    refused = [r for r in dry["results"] if r["userErrors"]]
    assert [r["userErrors"] for r in refused] == [
        [
            {
                "code": "STATE_NOT_MAPPED",
                "message": "The case is in 'review', which version 2 lacks; map it in stateMap.",
                "field": ["caseIds"],
            }
        ]
    ] * 2
    assert [r["toState"] for r in refused] == [None, None]
    # A landing state from which version 3 can never finish (stored as a server did before the
    # checks at definition, which now refuse it); a role version 4 lacks.
    v3 = copy.deepcopy(PERMIT_V1)
    v3["states"]["stuck"] = {}
    v3["actions"]["poke"] = {"allowed_roles": ["clerk"], "enabled_states": ["stuck"]}
    async with db.transaction() as s:
        assert (await store_as_before(s, v3)).version == 3
    stuck = await migrate(
        gql,
        admin,
        toVersion=3,
        caseIds=[await case_id(gql, admin, first)],
        stateMap=[{"from": "review", "to": "stuck"}],
    )
    assert stuck["results"][0]["userErrors"] == [
        {
            "code": "STATE_STRANDED",
            "message": "From 'stuck' no terminal state can be reached in version 3.",
            "field": ["caseIds"],
        }
    ]
    v4 = copy.deepcopy(PERMIT_V1)
    v4["roles"] = {"clerk": {"callbacks": ["creation_user"]}, "checker": {}}
    for name in ("decide", "reject"):
        v4["actions"][name]["assigned_role"] = "checker"
    await define(gql, admin, v4)
    roles = await migrate(gql, admin, toVersion=4, caseIds=[await case_id(gql, admin, second)])
    assert [e["code"] for e in roles["results"][0]["userErrors"]] == ["MISSING_IN_VERSION"]
    assert "'reviewer'" in roles["results"][0]["userErrors"][0]["message"]
    # A terminal landing state for a running case; a case already on the version.
    ended = await migrate(
        gql, admin, caseIds=[await case_id(gql, admin, first)], stateMap=[{"from": "review", "to": "approved"}]
    )
    assert ended["results"][0]["userErrors"][0]["code"] == "STATE_STRANDED"
    assert (ended["migrated"], ended["refused"]) == (0, 1)
    assert state_and_version(await case_of(gql, admin, first)) == ("review", 1)
    draft_case = await case_id(gql, admin, draft)
    assert (await migrate(gql, admin, caseIds=[draft_case]))["migrated"] == 1
    twice = await migrate(gql, admin, caseIds=[draft_case])
    assert twice["results"][0]["userErrors"][0] == {
        "code": "ALREADY_ON_VERSION",
        "message": "The case is on version 2 already.",
        "field": ["caseIds"],
    }


async def case_id(gql, token, item_id):
    return (await case_of(gql, token, item_id))["id"]


async def test_bad_requests_are_refused_whole(gql, make_user):
    admin, _, sub, (draft, *_) = await permits(gql, make_user, submitted=0)
    some = [await case_id(gql, admin, draft)]
    cases = [
        ({"subprojectId": sub, "caseIds": some}, "INVALID_INPUT", ["subprojectId"]),
        ({}, "INVALID_INPUT", ["subprojectId"]),
        ({"caseIds": some, "toVersion": 9}, "NOT_FOUND", ["toVersion"]),
        (
            {"caseIds": some, "stateMap": [{"from": "review", "to": "nowhere"}]},
            "INVALID_INPUT",
            ["stateMap", "0", "to"],
        ),
        (
            {"caseIds": some, "stateMap": [{"from": "a", "to": "draft"}, {"from": "a", "to": "checking"}]},
            "INVALID_INPUT",
            ["stateMap", "1", "from"],
        ),
        ({"subprojectId": sub, "first": 0}, "INVALID_INPUT", ["first"]),
        ({"caseIds": []}, "INVALID_INPUT", ["caseIds"]),
    ]
    for input, code, field in cases:
        answer = await migrate(gql, admin, **input)
        assert [(e["code"], e["field"]) for e in answer["userErrors"]] == [(code, field)], input
        assert answer["results"] == [] and answer["migrated"] == 0
    assert state_and_version(await case_of(gql, admin, draft)) == ("draft", 1)


async def test_batches_go_on_from_the_cursor(gql, make_user):
    admin, _, sub, items = await permits(gql, make_user, submitted=0, drafts=5)
    ids = sorted([await case_id(gql, admin, item) for item in items])
    first = await migrate(gql, admin, subprojectId=sub, first=2)
    assert (first["migrated"], first["hasMore"], first["endCursor"]) == (2, True, ids[1])
    assert [r["caseId"] for r in first["results"]] == ids[:2]
    rest = await migrate(gql, admin, subprojectId=sub, first=2, after=first["endCursor"])
    assert [r["caseId"] for r in rest["results"]] == ids[2:4] and rest["hasMore"] is True
    last = await migrate(gql, admin, subprojectId=sub, first=2, after=rest["endCursor"])
    assert ([r["caseId"] for r in last["results"]], last["hasMore"]) == (ids[4:], False)
    assert {state_and_version(await case_of(gql, admin, item)) for item in items} == {("draft", 2)}


async def test_cases_refused_on_the_way_are_left_whole_and_their_neighbours_move(gql, make_user):
    """In an ORDERED subproject, version 2 closes a checked permit at once (an AUTO action), which
    the earlier open item forbids: those cases stay as they were, the draft before them moves.
    (Four refusals: the batch is tried whole three times, then case by case.)"""
    _, admin = await make_user("root", admin=True)
    rita_id, _ = await make_user("rita")
    await define(gql, admin, PERMIT_V1)
    _, sub, _ = await build_tree(gql, admin, items=0, workflow="permit", mode="ORDERED")
    draft = (await new_item(gql, admin, sub["id"], "First", reviewer=[rita_id]))["workflowItem"]["id"]
    submitted = []
    for n in range(4):
        item = (await new_item(gql, admin, sub["id"], f"Later {n}", reviewer=[rita_id]))["workflowItem"]["id"]
        await submit(gql, admin, item)
        submitted.append(item)
    v2 = permit_v2()
    v2["actions"]["auto_approve"] = {"trigger": "auto", "enabled_states": ["checking"], "new_state": "approved"}
    await define(gql, admin, v2)
    moved = await migrate(gql, admin, subprojectId=sub["id"], stateMap=[{"from": "review", "to": "checking"}])
    assert (moved["migrated"], moved["refused"]) == (1, 4)
    refused = [r for r in moved["results"] if r["userErrors"]]
    assert {(r["userErrors"][0]["code"], r["toState"]) for r in refused} == {("PREVIOUS_ITEMS_OPEN", None)}
    for item in submitted:
        case = await case_of(gql, admin, item)
        assert state_and_version(case) == ("review", 1) and case["version"] == 1  # submitted only
        assert [e["node"]["kind"] for e in case["log"]["edges"]].count("case_migrated") == 0
    case = await case_of(gql, admin, draft)
    assert state_and_version(case) == ("draft", 2)
    assert [e["node"]["kind"] for e in case["log"]["edges"]].count("case_migrated") == 1


async def test_who_may_migrate_follows_the_subprojects_and_items_rights(gql, make_user):
    admin, _, sub, (draft, *_) = await permits(gql, make_user, submitted=0)
    owner_id, owner = await make_user("owner")
    by_sub = await migrate(gql, owner, subprojectId=sub, dryRun=True)
    assert by_sub["userErrors"][0]["code"] == "NOT_FOUND"
    draft_case = await case_id(gql, admin, draft)
    hidden = await migrate(gql, owner, caseIds=[draft_case])
    assert hidden["userErrors"] == [] and hidden["results"] == [
        {
            "caseId": draft_case,
            "case": None,
            "fromState": None,
            "toState": None,
            "userErrors": [
                {"code": "NOT_FOUND", "message": f"No case with id {draft_case!r} exists.", "field": ["caseIds"]}
            ],
        }
    ]
    for intent in ("workflowItem.view", "workflowItem.update"):
        granted = await gql(GRANT, {"r": draft, "i": intent, "p": owner_id}, token=admin)
        assert granted["grantPermission"]["userErrors"] == []
        answer = await migrate(gql, owner, caseIds=[draft_case])
        codes = [e["code"] for r in answer["results"] for e in r["userErrors"]]
        assert codes == (["NOT_ALLOWED"] if intent == "workflowItem.view" else [])
    assert state_and_version(await case_of(gql, admin, draft)) == ("draft", 2)
    await gql(GRANT, {"r": sub, "i": "subproject.update", "p": owner_id}, token=admin)
    assert (await migrate(gql, owner, subprojectId=sub))["userErrors"] == []


async def test_a_retired_version_takes_no_new_subproject_or_item(gql, make_user):
    admin, _, sub, (draft, *_) = await permits(gql, make_user, submitted=0)
    _, rita = await make_user("someone")
    refused = (await gql(RETIRE_WORKFLOW, {"input": {"workflow": "permit", "version": 2}}, token=rita))[
        "retireWorkflow"
    ]
    assert refused["userErrors"][0]["code"] == "NOT_ALLOWED"
    retired = await gql(RETIRE_WORKFLOW, {"input": {"workflow": "permit", "version": 1}}, token=admin)
    assert retired["retireWorkflow"] == {"workflow": {"shortName": "permit", "version": 1}, "userErrors": []}
    blocked = await new_item(gql, admin, sub, "Blocked")
    assert blocked["workflowItem"] is None and blocked["userErrors"] == [
        {
            "code": "WORKFLOW_RETIRED",
            "message": "Version 1 of the workflow 'permit' is retired: a new workflow item cannot use it; "
            "migrate to another version (migrateCases).",
            "field": ["subprojectId"],
        }
    ]
    assert state_and_version(await case_of(gql, admin, draft)) == ("draft", 1)  # its cases run on
    # Retire version 2 as well: version 1 is no way back, and no subproject can start.
    await gql(RETIRE_WORKFLOW, {"input": {"workflow": "permit", "version": 2}}, token=admin)
    back = await migrate(gql, admin, subprojectId=sub, toVersion=1)
    assert back["userErrors"][0]["code"] == "WORKFLOW_RETIRED"
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Other"}}, token=admin))["createProject"]
    none_left = await gql(
        CREATE_SUBPROJECT,
        {"input": {"projectId": project["project"]["id"], "displayName": "X", "currency": "EUR", "workflow": "permit"}},
        token=admin,
    )
    assert none_left["createSubproject"]["userErrors"] == [
        {
            "code": "WORKFLOW_RETIRED",
            "message": "Every version of the workflow 'permit' is retired.",
            "field": ["workflow"],
        }
    ]
    unknown = (await gql(RETIRE_WORKFLOW, {"input": {"workflow": "permit", "version": 7}}, token=admin))[
        "retireWorkflow"
    ]
    assert unknown["userErrors"][0]["code"] == "NOT_FOUND"


LIVE_MIGRATIONS = """subscription($i: ID) { activity(workflowItemId: $i) { kind actor { login } data } }"""


async def test_a_live_subscriber_hears_the_case_migrated(db, make_actor):
    owner = await make_actor("owner", admin=True)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=PERMIT_V1)
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="permit"
        )
        item, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="I")
        await engine.define_workflow(s, actor=None, spec=permit_v2())
    hub = EventHub(db)
    await hub.start()
    context = Context(db=db, settings=Settings(database_url=db.url), hub=hub, actor=owner, live=True)
    stream = await schema.subscribe(LIVE_MIGRATIONS, variable_values={"i": item.id}, context_value=context)
    heard = asyncio.ensure_future(anext(stream))
    await wait_until(lambda: hub.subscriber_count == 1, what="the subscription registered with the hub")
    async with db.transaction() as s:
        await migration.migrate_cases(s, actor=owner, workflow="permit", to_version=2, case_ids=[case.id])
    await hub.catch_up()
    result = await heard
    await stream.aclose()
    await hub.stop()
    assert not result.errors and result.data["activity"]["kind"] == "case_migrated"
    assert result.data["activity"]["actor"] == {"login": "owner"}
    assert (result.data["activity"]["data"]["fromVersion"], result.data["activity"]["data"]["toVersion"]) == (1, 2)


async def test_a_new_subproject_may_name_the_version_its_items_take(gql, make_user):
    """createSubproject's workflowVersion: an older version than the latest, its items on it; an
    unknown or retired version refused on that field and nothing created."""
    admin, _, _, _ = await permits(gql, make_user, submitted=0)
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Versions"}}, token=admin))["createProject"]

    async def subproject(version):
        made = await gql(
            CREATE_SUBPROJECT,
            {
                "input": {
                    "projectId": project["project"]["id"],
                    "displayName": f"On {version}",
                    "currency": "EUR",
                    "workflow": "permit",
                    "workflowVersion": version,
                }
            },
            token=admin,
        )
        return made["createSubproject"]

    older = await subproject(1)
    assert older["userErrors"] == [] and older["subproject"]["workflow"] == {"shortName": "permit", "version": 1}
    item = await new_item(gql, admin, older["subproject"]["id"], "On the older one")
    assert state_and_version(await case_of(gql, admin, item["workflowItem"]["id"])) == ("draft", 1)
    newest = await subproject(None)
    assert newest["subproject"]["workflow"] == {"shortName": "permit", "version": 2}
    unknown = await subproject(5)
    assert unknown["subproject"] is None
    assert [(e["code"], e["field"]) for e in unknown["userErrors"]] == [("NOT_FOUND", ["workflowVersion"])]
    await gql(RETIRE_WORKFLOW, {"input": {"workflow": "permit", "version": 1}}, token=admin)
    retired = await subproject(1)
    assert [(e["code"], e["field"]) for e in retired["userErrors"]] == [("WORKFLOW_RETIRED", ["workflowVersion"])]
    listed = await gql(
        "query($id: ID!) { node(id: $id) { ... on Project { subprojects(first: 10) { totalCount } } } }",
        {"id": project["project"]["id"]},
        token=admin,
    )
    assert listed["node"]["subprojects"]["totalCount"] == 2
