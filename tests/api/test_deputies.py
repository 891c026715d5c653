"""Deputies (issue 38, point 1) over HTTP: a deputyship starts and ends exactly at its instants
(the deputies clock is moved, nothing runs in between), the deputy sees and performs the absent
user's tasks, logged on their behalf, reads what the absent user's roles show and nothing their
grants show, gets their notifications, one level only; every refusal changes nothing."""

from datetime import UTC, datetime, timedelta

from engine.people import deputies
from tests.fixtures.builders import bug_item, build_tree
from tests.fixtures.deputies import (
    DEPUTIES_OF,
    HEARD,
    HOUR,
    ITEM_LOG,
    REMOVE_DEPUTY,
    T0,
    TASKS,
    my_actions,
    name_deputy,
    resolve,
    subproject_of,
    tasks,
    visible,
)
from tests.fixtures.documents import (
    ADD_MEMBER,
    CREATE_GROUP,
    CREATE_ITEM,
    EXECUTE,
    GRANT,
    SET_DEPUTY,
    SET_DISABLED,
    SUBSCRIBE,
)
from tests.fixtures.live import WsClient


async def test_a_deputy_acts_for_the_absent_user_exactly_from_from_until_until(gql, make_user, clock):
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, carol = await make_user("carol")
    item = await bug_item(gql, owner, alice_id)
    made = await name_deputy(gql, alice, bob_id, starts=T0 + HOUR, until=T0 + 2 * HOUR, comment="holiday")
    assert made["userErrors"] == []
    deputyship = made["deputyship"]
    assert (deputyship["user"]["login"], deputyship["deputy"]["login"], deputyship["comment"]) == (
        "alice",
        "bob",
        "holiday",
    )
    assert (deputyship["active"], deputyship["createdBy"]["login"]) == (False, "alice")

    # Before: bob sees nothing of alice's, and is told her item does not exist.
    clock.set(T0 + HOUR - timedelta(microseconds=1))
    assert await tasks(gql, bob) == []
    assert not await visible(gql, bob, item["id"])
    assert (await resolve(gql, bob, item["id"], "too early"))["userErrors"][0]["code"] == "NOT_FOUND"

    # From `from` on, exactly: alice's task is bob's too, marked, and alice keeps it.
    clock.set(T0 + HOUR)
    assert await tasks(gql, bob) == [("resolve", "Crash", {"login": "alice"})]
    assert await tasks(gql, alice) == [("resolve", "Crash", None)]
    assert await tasks(gql, carol) == []
    assert await visible(gql, bob, item["id"]) and not await visible(gql, carol, item["id"])
    assert await my_actions(gql, bob, item["id"]) == ["comment", "edit", "resolve"]  # as alice's are
    done = await resolve(gql, bob, item["id"], "fixed it for alice")
    assert done["userErrors"] == []
    assert done["case"]["state"]["shortName"] == "resolved"
    assert done["activity"] == {"action": "resolve", "actor": {"login": "bob"}, "onBehalfOf": {"login": "alice"}}
    log = [e["node"] for e in (await gql(ITEM_LOG, {"id": item["id"]}, token=owner))["node"]["case"]["log"]["edges"]]
    assert [(e["actor"]["login"], e["onBehalfOf"]) for e in log if e["action"] == "resolve"] == [
        ("bob", {"login": "alice"})
    ]
    assert {e["onBehalfOf"] is None for e in log if e["action"] != "resolve"} == {True}

    # A new task of alice's during the period is bob's too; at `until`, exactly, all of it stops.
    second = await gql(
        CREATE_ITEM,
        {
            "input": {
                "subprojectId": await subproject_of(gql, owner, item["id"]),
                "displayName": "Leak",
                "assigneeId": alice_id,
            }
        },
        token=owner,
    )
    second_id = second["createWorkflowItem"]["workflowItem"]["id"]
    clock.set(T0 + 2 * HOUR - timedelta(microseconds=1))
    assert await tasks(gql, bob) == [("resolve", "Leak", {"login": "alice"})]
    assert await my_actions(gql, bob, second_id) == ["comment", "edit", "resolve"]
    clock.set(T0 + 2 * HOUR)
    assert await tasks(gql, bob) == []
    assert not await visible(gql, bob, second_id) and not await visible(gql, bob, item["id"])
    assert (await resolve(gql, bob, second_id, "too late"))["userErrors"][0]["code"] == "NOT_FOUND"
    assert await tasks(gql, alice) == [("resolve", "Leak", None)]


async def test_a_deputy_borrows_roles_not_grants_and_one_level_only(gql, make_user, clock):
    """Bob stands in for alice, carol for bob: carol gets nothing of alice's. Alice may view a
    project by a grant: bob may not, nor act where alice would act by a privilege."""
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, carol = await make_user("carol")
    item = await bug_item(gql, owner, alice_id)
    project, _, _ = await build_tree(gql, owner, items=0)
    granted = await gql(GRANT, {"r": project["id"], "i": "project.view", "p": alice_id}, token=owner)
    assert granted["grantPermission"]["userErrors"] == []
    assert (await name_deputy(gql, alice, bob_id, until=T0 + HOUR))["userErrors"] == []
    assert (await name_deputy(gql, bob, carol_id, until=T0 + HOUR))["userErrors"] == []

    assert await tasks(gql, bob) == [("resolve", "Crash", {"login": "alice"})]
    assert await tasks(gql, carol) == []
    assert not await visible(gql, carol, item["id"])
    assert (await resolve(gql, carol, item["id"], "two levels"))["userErrors"][0]["code"] == "NOT_FOUND"
    assert await visible(gql, alice, project["id"]) and not await visible(gql, bob, project["id"])


async def test_a_task_of_a_group_the_absent_user_is_in_reaches_the_deputy(gql, make_user, clock):
    _, root = await make_user("root", admin=True)
    _, owner = await make_user("owner")
    alice_id, _ = await make_user("alice")
    bob_id, bob = await make_user("bob")
    group = (await gql(CREATE_GROUP, {"name": "fixers"}, token=root))["createGroup"]["group"]["id"]
    assert (await gql(ADD_MEMBER, {"g": group, "u": alice_id}, token=root))["addGroupMember"]["userErrors"] == []
    crash = await bug_item(gql, owner, group)
    leak = await bug_item(gql, owner, group)
    # An admin names another user's deputy with userId.
    made = await name_deputy(gql, root, bob_id, until=T0 + HOUR, user_id=alice_id)
    assert made["userErrors"] == [] and made["deputyship"]["createdBy"]["login"] == "root"
    assert await tasks(gql, bob) == [("resolve", "Crash", {"login": "alice"})] * 2
    assert (await resolve(gql, bob, crash["id"], "for the group"))["activity"]["onBehalfOf"] == {"login": "alice"}
    # Once bob is in the group too, the task is his own: listed once, on nobody's behalf.
    assert (await gql(ADD_MEMBER, {"g": group, "u": bob_id}, token=root))["addGroupMember"]["userErrors"] == []
    assert await tasks(gql, bob) == [("resolve", "Crash", None)]
    assert (await gql(TASKS, token=bob))["myTasks"]["totalCount"] == 1
    assert (await resolve(gql, bob, leak["id"], "as a member"))["activity"]["onBehalfOf"] is None


async def test_the_absent_users_notifications_reach_the_deputy_while_active(gql, make_user, clock):
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, sub, _ = await build_tree(gql, owner, items=0, workflow="bug")

    async def assign_alice(name):
        made = await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": name, "assigneeId": alice_id}},
            token=owner,
        )
        assert made["createWorkflowItem"]["userErrors"] == []

    async def heard(token):
        inbox = (await gql(HEARD, token=token))["notifications"]["edges"]
        return sorted((n["node"]["level"], n["node"]["activity"]["workflowItem"]["displayName"]) for n in inbox)

    assert (await name_deputy(gql, alice, bob_id, starts=T0 + HOUR, until=T0 + 2 * HOUR))["userErrors"] == []
    await assign_alice("Before")
    clock.set(T0 + HOUR)
    await assign_alice("During")
    clock.set(T0 + 2 * HOUR)
    await assign_alice("After")
    assert await heard(alice) == [("ASSIGNED", "After"), ("ASSIGNED", "Before"), ("ASSIGNED", "During")]
    clock.set(T0 + HOUR)  # bob reads them while he may read the entries
    assert await heard(bob) == [("ASSIGNED", "During")]


SAID = """{ notifications { edges { node { level sentence activity { workflowItem { displayName } } } } } }"""


async def test_a_deputys_copy_asks_them_to_act_for_the_absent_user_while_they_stand_in(gql, make_user, clock):
    """Alice's notification asks her to act; bob's copy asks him, for her, while he stands in; the
    owner, who assigned it and is asked nothing, hears nothing. Once the deputyship ends, bob's
    copy is no longer his to read (as every notification: only while he may read its entry)."""
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, sub, _ = await build_tree(gql, owner, items=0, workflow="bug")
    assert (await name_deputy(gql, alice, bob_id, starts=T0 + HOUR, until=T0 + 2 * HOUR))["userErrors"] == []
    clock.set(T0 + HOUR)
    item_input = {"subprojectId": sub["id"], "displayName": "Leaking tap", "assigneeId": alice_id}
    made = await gql(CREATE_ITEM, {"input": item_input}, token=owner)
    assert made["createWorkflowItem"]["userErrors"] == []

    async def said(token):
        return [
            (n["node"]["level"], n["node"]["sentence"])
            for n in (await gql(SAID, token=token))["notifications"]["edges"]
        ]

    assert await said(alice) == [("ASSIGNED", "Resolve is yours: Leaking tap")]
    assert await said(bob) == [("ASSIGNED", "Resolve is yours: Leaking tap, for alice")]
    assert await said(owner) == []
    clock.set(T0 + 2 * HOUR)
    assert await said(bob) == []
    assert await said(alice) == [("ASSIGNED", "Resolve is yours: Leaking tap")]


async def test_deputyships_are_seen_and_removed_by_their_two_users_and_admins(gql, make_user, clock):
    _, root = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, carol = await make_user("carol")
    later = await name_deputy(gql, alice, bob_id, starts=T0 + 3 * HOUR, until=T0 + 4 * HOUR, comment="later")
    now = await name_deputy(gql, alice, bob_id, until=T0 + HOUR, comment="now")

    async def lists(token, user_id):
        user = (await gql(DEPUTIES_OF, {"id": user_id}, token=token))["node"]
        return [d["comment"] for d in user["deputies"]], [d["comment"] for d in user["deputyFor"]]

    assert await lists(alice, alice_id) == (["now", "later"], [])
    assert await lists(bob, bob_id) == ([], ["now", "later"])
    assert await lists(root, alice_id) == (["now", "later"], [])
    assert await lists(carol, alice_id) == ([], [])
    assert await lists(carol, bob_id) == ([], [])
    assert [await visible(gql, t, now["deputyship"]["id"]) for t in (alice, bob, root, carol)] == [
        True,
        True,
        True,
        False,
    ]

    refused = (await gql(REMOVE_DEPUTY, {"id": now["deputyship"]["id"]}, token=carol))["removeDeputy"]
    assert (refused["id"], refused["userErrors"][0]["code"]) == (None, "NOT_FOUND")
    assert await lists(alice, alice_id) == (["now", "later"], [])
    removed = (await gql(REMOVE_DEPUTY, {"id": now["deputyship"]["id"]}, token=bob))["removeDeputy"]
    assert removed == {"id": now["deputyship"]["id"], "userErrors": []}
    assert await lists(alice, alice_id) == (["later"], [])
    clock.set(T0 + 4 * HOUR)  # ended ones leave the lists
    assert await lists(root, alice_id) == ([], [])
    gone = (await gql(REMOVE_DEPUTY, {"id": later["deputyship"]["id"]}, token=root))["removeDeputy"]
    assert gone["userErrors"] == []


async def test_bad_deputyships_are_refused_with_a_code_and_change_nothing(gql, make_user, clock):
    _, root = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    carol_id, _ = await make_user("carol")
    dora_id, _ = await make_user("dora")
    group = (await gql(CREATE_GROUP, {"name": "crew"}, token=root))["createGroup"]["group"]["id"]
    assert (await gql(SET_DISABLED, {"u": dora_id, "disabled": True}, token=root))["disableUser"]["userErrors"] == []
    assert (await name_deputy(gql, alice, bob_id, starts=T0 + HOUR, until=T0 + 2 * HOUR))["userErrors"] == []
    cases = [
        ({"deputy_id": carol_id, "starts": T0 + HOUR, "until": T0 + HOUR}, "INVALID_INPUT", ["until"]),
        ({"deputy_id": carol_id, "starts": T0 - 2 * HOUR, "until": T0 - HOUR}, "INVALID_INPUT", ["until"]),
        ({"deputy_id": carol_id, "until": T0 + timedelta(days=367)}, "INVALID_INPUT", ["until"]),
        ({"deputy_id": carol_id, "until": T0 + HOUR, "comment": "x" * 2001}, "INVALID_INPUT", ["comment"]),
        ({"deputy_id": alice_id, "until": T0 + HOUR}, "SELF_DEPUTY", ["deputyId"]),
        ({"deputy_id": "usr_01NOSUCHUSER", "until": T0 + HOUR}, "NOT_FOUND", ["deputyId"]),
        ({"deputy_id": group, "until": T0 + HOUR}, "NOT_FOUND", ["deputyId"]),
        ({"deputy_id": dora_id, "until": T0 + HOUR}, "INVALID_INPUT", ["deputyId"]),
        ({"deputy_id": carol_id, "until": T0 + HOUR, "user_id": bob_id}, "NOT_ALLOWED", ["userId"]),
        (
            {"deputy_id": bob_id, "starts": T0 + 90 * timedelta(minutes=1), "until": T0 + 3 * HOUR},
            "ALREADY_EXISTS",
            ["deputyId"],
        ),
    ]
    for kwargs, code, field in cases:
        deputy_id = kwargs.pop("deputy_id")
        refused = await name_deputy(gql, alice, deputy_id, **kwargs)
        assert refused["deputyship"] is None
        assert [(e["code"], e["field"]) for e in refused["userErrors"]] == [(code, field)], (kwargs, refused)
    user = (await gql(DEPUTIES_OF, {"id": alice_id}, token=alice))["node"]
    assert [d["deputy"]["login"] for d in user["deputies"]] == ["bob"]
    # At most MAX_OPEN open deputyships per absent user.
    for n in range(deputies.MAX_OPEN - 1):
        starts = T0 + timedelta(days=n + 1)
        assert (await name_deputy(gql, alice, carol_id, starts=starts, until=starts + HOUR))["userErrors"] == []
    over = await name_deputy(gql, alice, carol_id, starts=T0 + timedelta(days=30), until=T0 + timedelta(days=31))
    assert [e["code"] for e in over["userErrors"]] == ["TOO_MANY_DEPUTIES"]
    user = (await gql(DEPUTIES_OF, {"id": alice_id}, token=alice))["node"]
    assert len(user["deputies"]) == deputies.MAX_OPEN


async def test_a_deputys_task_list_costs_the_same_statements_however_many_tasks(
    gql, make_user, clock, count_statements
):
    _, owner = await make_user("owner")
    alice_id, _ = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, root = await make_user("root", admin=True)
    _, sub, _ = await build_tree(gql, owner, items=0, workflow="bug")
    assert (await name_deputy(gql, root, bob_id, until=T0 + HOUR, user_id=alice_id))["userErrors"] == []
    counts = {}
    for total in (1, 5):
        while len(await tasks(gql, bob)) < total:
            made = await gql(
                CREATE_ITEM,
                {"input": {"subprojectId": sub["id"], "displayName": "Bug", "assigneeId": alice_id}},
                token=owner,
            )
            assert made["createWorkflowItem"]["userErrors"] == []
        with count_statements() as counter:
            found = await tasks(gql, bob)
        counts[total] = counter.count
        assert {t[2]["login"] for t in found} == {"alice"} and len(found) == total
    assert counts[1] == counts[5], counts
    assert (await gql(TASKS, token=bob))["myTasks"]["totalCount"] == 5
    with count_statements() as counter:
        await gql(DEPUTIES_OF, {"id": alice_id}, token=root)
    listed = counter.count
    users = """{ users { edges { node { login deputies { deputy { login } } deputyFor { user { login } } } } } }"""
    with count_statements() as counter:
        everyone = (await gql(users, token=root))["users"]["edges"]
    assert len(everyone) == 4 and counter.count <= listed + 1, (counter.count, listed)


async def test_an_execute_payload_and_the_executes_of_a_plain_user_say_no_one_was_stood_in_for(gql, make_user, clock):
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    item = await bug_item(gql, owner, alice_id)
    act = {"workflowItemId": item["id"], "action": "comment", "comment": "mine"}
    done = (await gql(EXECUTE, {"input": act}, token=alice))["executeAction"]
    assert done["userErrors"] == [] and done["activity"]["actor"]["login"] == "alice"
    assert (await resolve(gql, alice, item["id"], "myself"))["activity"]["onBehalfOf"] is None


LIVE_ITEM = (
    """subscription($item: ID!, $after: String) { activity(workflowItemId: $item, after: $after) { comment } }"""
)
LIVE_HEARD = """subscription { notifications { level activity { comment } } }"""
LAST_SEQ = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { log(first: 100) {
  edges { node { seq } } } } } } }"""


async def test_the_live_streams_reach_a_deputy_as_the_reads_do(live_server, make_user):
    """A server of its own (real time): the deputy, standing in from now on, hears of the absent
    user's case live, and gets the copy of the absent user's notification, as queries show them."""
    gql = live_server.gql
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    item = (await bug_item(gql, owner, alice_id))["id"]
    subscribed = await gql(SUBSCRIBE, {"level": "CASE", "target": item}, token=alice)
    assert subscribed["subscribeToNotifications"]["userErrors"] == []
    until = (datetime.now(UTC) + HOUR).isoformat()
    assert (await gql(SET_DEPUTY, {"input": {"deputyId": bob_id, "until": until}}, token=alice))["setDeputy"][
        "userErrors"
    ] == []
    last = (await gql(LAST_SEQ, {"id": item}, token=bob))["node"]["case"]["log"]["edges"][-1]["node"]["seq"]
    client = await WsClient.connect(live_server.ws, bob)
    try:
        await client.subscribe(LIVE_ITEM, {"item": item, "after": str(last)})
        await client.subscribe(LIVE_HEARD)
        await gql(EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "comment": "news"}}, token=owner)
        received = await client.receive(2)
    finally:
        await client.close()
    assert sorted(map(str, received)) == sorted(
        map(
            str,
            [{"activity": {"comment": "news"}}, {"notifications": {"level": "CASE", "activity": {"comment": "news"}}}],
        )
    )
