"""Child workflows over GraphQL (issue 21): the three
examples — AskInfo (a WORKFLOW child), Review & Opinion (PARALLEL) and the TIP vote (DYNAMIC,
one child scope per voter, decided by a quorum) — plus notifications, a timer in a child and the
built-in workflows. Specs: test_child_specs_api.py; instances: test_child_instances_api.py; scale
and races: test_child_workflows_scale_api.py."""

from datetime import datetime, timedelta

from tests.fixtures.child_workflows import EXECUTE_ID, REVIEW, case_of, define, new_item, run, tasks, tip_item
from tests.fixtures.documents import MY_TASKS, RUN_DUE

NOTIFICATION_ACTORS = (
    """{ notifications(first: 50) { edges { node { level activity { action actor { login } } } } } }"""
)

SUBSCRIBE_INPUT = """mutation($input: NotificationSubscriptionInput!) {
  subscribeToNotifications(input: $input) { userErrors { code message } } }"""

ASK_INFO = {
    "short_name": "ask_info",
    "roles": {"lawyer": {"callbacks": ["creation_user"]}, "client": {}, "judge": {}},
    "states": {"open": {}, "done": {"terminal": True}, "aborted": {"terminal": True}},
    "actions": {
        "init": {"trigger": "init", "new_state": "open"},
        "ask_client": {
            "trigger": "workflow",
            "enabled_states": ["open"],
            "new_state": "done",
            "states": {"ac_asking": {}, "ac_responding": {}, "ac_done": {"terminal": True}},
            "children": {
                "ac_init": {"trigger": "init", "new_state": "ac_asking"},
                "ac_ask": {"assigned_role": "lawyer", "assigned_states": ["ac_asking"], "new_state": "ac_responding"},
                "ac_respond": {"assigned_role": "client", "assigned_states": ["ac_responding"], "new_state": "ac_done"},
            },
        },
        "abort": {"assigned_role": "judge", "assigned_states": ["open"], "new_state": "aborted"},
    },
}


def enabled(case):
    return sorted(e["action"]["shortName"] for e in case["enabledActions"])


def scopes(case):
    return [
        (s["parent"]["action"]["shortName"] if s["parent"] else None, s["state"]["shortName"], s["status"])
        for s in case["scopes"]
    ]


async def test_ask_info_runs_its_child_workflow_and_abort_cancels_it(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, lawyer = await make_user("lawyer")
    client_id, client = await make_user("client")
    judge_id, judge = await make_user("judge")
    await define(gql, admin, ASK_INFO)
    item = await new_item(gql, lawyer, "ask_info", client=[client_id], judge=[judge_id])
    case = await case_of(gql, lawyer, item)
    assert [s["shortName"] for s in case["states"]] == ["open", "ac_asking"]
    assert scopes(case) == [(None, "open", "ACTIVE"), ("ask_client", "ac_asking", "ACTIVE")]
    assert enabled(case) == ["abort", "ac_ask"]
    ask = next(e for e in case["enabledActions"] if e["action"]["shortName"] == "ac_ask")
    assert ask["parent"] == {"action": {"shortName": "ask_client"}}
    assert [e["assignees"] for e in case["enabledActions"] if e["action"]["shortName"] == "ac_ask"] == [
        [{"login": "lawyer"}]
    ]
    # the child's action changes its own scope, never its parent's
    asked = (await gql(EXECUTE_ID, run(item, "ac_ask"), token=lawyer))["executeAction"]
    assert asked["userErrors"] == [] and asked["case"]["state"]["shortName"] == "open"
    assert asked["activity"]["data"]["from"] == "ac_asking" and asked["activity"]["data"]["to"] == "ac_responding"
    refused = (await gql(EXECUTE_ID, run(item, "ac_respond"), token=lawyer))["executeAction"]
    assert refused["userErrors"][0]["code"] == "NOT_ALLOWED"
    case = await case_of(gql, client, item)
    assert [s["shortName"] for s in case["states"]] == ["open", "ac_responding"]
    # abort disables ask_client: its child scope and instances are canceled, and stay so
    aborted = (await gql(EXECUTE_ID, run(item, "abort"), token=judge))["executeAction"]
    assert aborted["userErrors"] == [] and aborted["case"]["state"]["shortName"] == "aborted"
    assert aborted["activity"]["data"]["canceled"] == ["ask_client"]
    assert aborted["activity"]["data"]["closedChildren"] == 1
    case = await case_of(gql, client, item)
    assert case["status"] == "COMPLETED" and [s["shortName"] for s in case["states"]] == ["aborted"]
    assert scopes(case) == [(None, "aborted", "COMPLETED"), ("ask_client", "ac_responding", "CANCELED")]
    assert enabled(case) == []
    late = (await gql(EXECUTE_ID, run(item, "ac_respond"), token=client))["executeAction"]
    assert late["userErrors"][0]["code"] == "ACTION_NOT_ENABLED"
    assert (await gql(MY_TASKS, token=client))["myTasks"]["totalCount"] == 0


async def test_ask_info_completes_and_fires_its_parent_once(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, lawyer = await make_user("lawyer")
    client_id, client = await make_user("client")
    await define(gql, admin, ASK_INFO)
    item = await new_item(gql, lawyer, "ask_info", client=[client_id])
    assert (await gql(EXECUTE_ID, run(item, "ac_ask"), token=lawyer))["executeAction"]["userErrors"] == []
    tasks = (await gql(MY_TASKS, token=client))["myTasks"]
    assert [t["node"]["action"]["shortName"] for t in tasks["edges"]] == ["ac_respond"]
    answered = (await gql(EXECUTE_ID, run(item, "ac_respond"), token=client))["executeAction"]
    assert answered["userErrors"] == [] and answered["case"]["state"]["shortName"] == "done"
    case = await case_of(gql, lawyer, item)
    assert case["status"] == "COMPLETED" and scopes(case) == [
        (None, "done", "COMPLETED"),
        ("ask_client", "ac_done", "COMPLETED"),
    ]
    fired = [e["node"] for e in case["log"]["edges"] if e["node"]["action"] == "ask_client"]
    assert len(fired) == 1 and fired[0]["actor"] is None  # the system actor
    assert fired[0]["data"]["from"] == "open" and fired[0]["data"]["to"] == "done"
    assert fired[0]["data"]["condition"] == {"all": "done", "count": 1, "of": 1}


async def test_review_and_opinion_run_in_parallel(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, lawyer = await make_user("lawyer")
    await define(gql, admin, REVIEW)
    item = await new_item(gql, lawyer, "rev_op")
    case = await case_of(gql, lawyer, item)
    assert enabled(case) == ["opinion", "review"]
    assert scopes(case)[0] == (None, "open", "ACTIVE")
    assert sorted(scopes(case)[1:]) == [("opinion_wr", "opi_open", "ACTIVE"), ("review_wr", "rev_open", "ACTIVE")]
    review_scope = next(s for s in case["scopes"] if s["parent"] and s["parent"]["action"]["shortName"] == "review_wr")
    assert review_scope["parent"]["parent"] == {"action": {"shortName": "rev_and_op"}}
    reviewed = (await gql(EXECUTE_ID, run(item, "review"), token=lawyer))["executeAction"]
    assert reviewed["userErrors"] == [] and reviewed["case"]["state"]["shortName"] == "open"  # opinion still due
    case = await case_of(gql, lawyer, item)
    assert enabled(case) == ["opinion"]
    assert ("review_wr", "rev_done", "COMPLETED") in scopes(case)
    given = (await gql(EXECUTE_ID, run(item, "opinion"), token=lawyer))["executeAction"]
    assert given["userErrors"] == [] and given["case"]["state"]["shortName"] == "done"
    case = await case_of(gql, lawyer, item)
    fired = [e["node"]["action"] for e in case["log"]["edges"] if e["node"]["actor"] is None]
    assert fired.count("rev_and_op") == 1 and fired.count("review_wr") == 1 and fired.count("opinion_wr") == 1


async def test_two_approvals_of_three_accept_and_cancel_the_third_vote(gql, make_user):
    item, alice, _, tokens = await tip_item(gql, make_user)
    case = await case_of(gql, alice, item)
    assert [s["shortName"] for s in case["states"]] == ["open", "voting", "voting", "voting"]
    assert sorted(a["login"] for s in case["scopes"][1:] for a in s["parent"]["assignees"]) == [
        "voter1",
        "voter2",
        "voter3",
    ]
    assert enabled(case) == ["approve"] * 3 + ["reject"] * 3 + ["withdraw"]
    for token in tokens.values():
        assert await tasks(gql, token) == ["approve", "reject"]
    # one's own instance is picked; another's is refused
    first = (await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"]))["executeAction"]
    assert first["userErrors"] == [] and first["case"]["state"]["shortName"] == "open"
    others = [e for e in (await case_of(gql, alice, item))["enabledActions"] if e["assignees"] == [{"login": "voter3"}]]
    stolen = (await gql(EXECUTE_ID, run(item, "approve", enabledActionId=others[0]["id"]), token=tokens["voter2"]))[
        "executeAction"
    ]
    assert stolen["userErrors"][0]["code"] == "NOT_ALLOWED"
    assert await tasks(gql, tokens["voter1"]) == []
    second = (await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter2"]))["executeAction"]
    assert second["userErrors"] == [] and second["case"]["state"]["shortName"] == "accepted"
    case = await case_of(gql, alice, item)
    assert case["status"] == "COMPLETED" and enabled(case) == []
    assert sorted(scopes(case)[1:]) == [
        ("all_votes", "approved", "COMPLETED"),
        ("all_votes", "approved", "COMPLETED"),
        ("all_votes", "voting", "CANCELED"),
    ]
    assert await tasks(gql, tokens["voter3"]) == []  # the third vote left voter3's tasks
    fired = [e["node"] for e in case["log"]["edges"] if e["node"]["action"] == "all_votes"]
    assert len(fired) == 1 and fired[0]["actor"] is None
    assert fired[0]["data"]["condition"] == {
        "output": "yes",
        "state": "approved",
        "at_least": "2/3",
        "count": 2,
        "of": 3,
    }
    assert fired[0]["data"]["output"] == "yes" and fired[0]["data"]["to"] == "accepted"
    assert fired[0]["data"]["children"] == {"completed": 2, "canceled": 1}  # voter3's vote, not its two actions
    late = (await gql(EXECUTE_ID, run(item, "reject"), token=tokens["voter3"]))["executeAction"]
    assert late["userErrors"][0]["code"] == "ACTION_NOT_ENABLED"


async def test_two_rejections_of_three_reject(gql, make_user):
    item, alice, _, tokens = await tip_item(gql, make_user)
    one = (await gql(EXECUTE_ID, run(item, "reject"), token=tokens["voter3"]))["executeAction"]
    assert one["case"]["state"]["shortName"] == "open"  # 1 of 3 is not more than 1/3
    yes = (await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"]))["executeAction"]
    assert yes["case"]["state"]["shortName"] == "open"
    two = (await gql(EXECUTE_ID, run(item, "reject"), token=tokens["voter2"]))["executeAction"]
    assert two["userErrors"] == [] and two["case"]["state"]["shortName"] == "rejected"
    case = await case_of(gql, alice, item)
    fired = next(e["node"] for e in case["log"]["edges"] if e["node"]["action"] == "all_votes")
    assert fired["data"]["condition"] == {
        "output": "no",
        "state": "disapproved",
        "more_than": "1/3",
        "count": 2,
        "of": 3,
    }
    assert sorted(s[1:] for s in scopes(case)[1:]) == [
        ("approved", "COMPLETED"),
        ("disapproved", "COMPLETED"),
        ("disapproved", "COMPLETED"),
    ]


async def test_withdrawing_cancels_every_vote(gql, make_user):
    item, alice, _, tokens = await tip_item(gql, make_user)
    await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"])
    withdrawn = (await gql(EXECUTE_ID, run(item, "withdraw"), token=alice))["executeAction"]
    assert withdrawn["userErrors"] == [] and withdrawn["activity"]["data"]["closedChildren"] == 1 + 2 + 2 + 2
    case = await case_of(gql, alice, item)
    assert sorted(s[1:] for s in scopes(case)[1:]) == [
        ("approved", "COMPLETED"),
        ("voting", "CANCELED"),
        ("voting", "CANCELED"),
    ]
    for token in tokens.values():
        assert await tasks(gql, token) == []


async def test_subscribers_hear_of_each_vote_once_and_not_again_of_the_decision(gql, make_user):
    item, alice, _, tokens = await tip_item(gql, make_user)
    subscribed = await gql(SUBSCRIBE_INPUT, {"input": {"level": "ROLE"}}, token=alice)
    assert subscribed["subscribeToNotifications"]["userErrors"] == []
    await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"])
    await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter2"])
    heard = [
        (n["node"]["activity"]["action"], (n["node"]["activity"]["actor"] or {}).get("login"))
        for n in (await gql(NOTIFICATION_ACTORS, token=alice))["notifications"]["edges"]
    ]
    assert sorted(h for h in heard if h[0] in ("approve", "all_votes")) == [
        ("approve", "voter1"),
        ("approve", "voter2"),
    ]


TIMED = {
    "short_name": "timed_ask",
    "roles": {"lawyer": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "ask": {
            "trigger": "workflow",
            "enabled_states": ["open"],
            "new_state": "done",
            "states": {"waiting": {}, "expired": {"terminal": True}},
            "children": {
                "start": {"trigger": "init", "new_state": "waiting"},
                "expire": {
                    "trigger": "time",
                    "enabled_states": ["waiting"],
                    "timeout_seconds": 3600,
                    "new_state": "expired",
                },
            },
        },
    },
}


async def test_a_timer_inside_a_child_scope_fires_and_completes_the_parent(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, lawyer = await make_user("lawyer")
    await define(gql, admin, TIMED)
    item = await new_item(gql, lawyer, "timed_ask")
    case = await case_of(gql, lawyer, item)
    [timer] = case["timers"]
    assert timer["action"]["shortName"] == "expire"
    due = datetime.fromisoformat(timer["fireAt"]) + timedelta(seconds=1)
    fired = (await gql(RUN_DUE, {"input": {"now": due.isoformat()}}, token=admin))["runDueTimers"]
    assert fired["userErrors"] == []
    assert [f["action"] for f in fired["fired"]][:1] == ["expire"]
    case = await case_of(gql, lawyer, item)
    assert case["state"]["shortName"] == "done" and case["status"] == "COMPLETED"
    assert scopes(case) == [(None, "done", "COMPLETED"), ("ask", "expired", "COMPLETED")]


async def test_the_built_in_workflows_use_each_parent_trigger(gql, make_user):
    _, alice = await make_user("alice")
    lawyer_id, lawyer = await make_user("lawyer")
    controller_id, controller = await make_user("controller")
    # joint_review: the legal and the financial review in parallel
    item = await new_item(gql, alice, "joint_review", lawyer=[lawyer_id], controller=[controller_id])
    assert (await gql(EXECUTE_ID, run(item, "submit"), token=alice))["executeAction"]["userErrors"] == []
    assert await tasks(gql, lawyer) == ["review_legal"] and await tasks(gql, controller) == ["review_financial"]
    await gql(EXECUTE_ID, run(item, "review_financial"), token=controller)
    done = (await gql(EXECUTE_ID, run(item, "review_legal"), token=lawyer))["executeAction"]
    assert done["case"]["state"]["shortName"] == "reviewed"
    assert await children_logged(gql, alice, item, "reviews") == {"completed": 2, "canceled": 0}
    # tip: one vote per voter
    voters_ = [lawyer_id, controller_id, (await make_user("third"))[0]]
    vote = await new_item(gql, alice, "tip", voters=voters_)
    assert len((await case_of(gql, alice, vote))["scopes"]) == 4
    await gql(EXECUTE_ID, run(vote, "reject"), token=lawyer)
    rejected = (await gql(EXECUTE_ID, run(vote, "reject"), token=controller))["executeAction"]
    assert rejected["case"]["state"]["shortName"] == "rejected"
    assert await children_logged(gql, alice, vote, "all_votes") == {"completed": 2, "canceled": 1}
    # inquiry: a question round trip as a child workflow
    client_id, client = await make_user("client")
    ask = await new_item(gql, lawyer, "inquiry", client=[client_id])
    by_hand = (await gql(EXECUTE_ID, run(ask, "ask_client"), token=lawyer))["executeAction"]
    assert by_hand["userErrors"] == [
        {
            "code": "ACTION_NOT_ENABLED",
            "message": "'ask_client' runs when its children complete; it cannot be executed by hand.",
            "field": ["action"],
        }
    ]
    await gql(EXECUTE_ID, run(ask, "ask"), token=lawyer)
    answered = (await gql(EXECUTE_ID, run(ask, "respond"), token=client))["executeAction"]
    assert answered["case"]["state"]["shortName"] == "answered"
    over = (await gql(EXECUTE_ID, run(ask, "ask_client"), token=lawyer))["executeAction"]
    assert over["userErrors"][0]["message"] == "'ask_client' is not enabled in this case now."
    assert await children_logged(gql, lawyer, ask, "ask_client") == {"completed": 1, "canceled": 0}


async def children_logged(gql, token, item, parent):
    """``data.children`` of the one entry the parent's firing logged."""
    entries = [e["node"] for e in (await case_of(gql, token, item))["log"]["edges"] if e["node"]["action"] == parent]
    assert len(entries) == 1
    return entries[0]["data"]["children"]
