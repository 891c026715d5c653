"""myTasks read from the task index (issue 25): the same statement for 3 cases as for 30 (one:
the page is compiled, resolvers/compiled/tasks.py), a count only when totalCount is asked, and
the pages of a viewer reached through several parties (themselves, their group, both on one
instance) give each task once, oldest first."""

from types import SimpleNamespace

from tests.fixtures.builders import bug_case, mutate
from tests.fixtures.documents import ADD_MEMBER, CREATE_GROUP, REASSIGN
from tests.fixtures.task_index import recomputed

TASK_PAGE = """query($first: Int, $after: String) { myTasks(first: $first, after: $after) {
  totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id action { shortName } case { id } } } } }"""
TASK_PAGE_UNCOUNTED = """query($first: Int) { myTasks(first: $first) { edges { node { id action { shortName } } } } }"""


async def test_a_task_list_costs_the_same_for_3_and_30_cases_and_counts_only_when_asked(
    db, gql, make_user, make_actor, count_statements
):
    owner = await make_actor("sam")
    dev_id, dev = await make_user("dev")
    _, idle = await make_user("idle")  # no task at all
    await bug_case(db, owner, SimpleNamespace(user_id=dev_id), items=3)
    await gql(TASK_PAGE_UNCOUNTED, {"first": 2}, token=dev)  # the tokens are remembered from here on
    await gql(TASK_PAGE_UNCOUNTED, {"first": 2}, token=idle)

    async def costs():
        with count_statements() as counted:
            page = (await gql(TASK_PAGE, {"first": 2}, token=dev))["myTasks"]
        with count_statements() as uncounted:
            bare = (await gql(TASK_PAGE_UNCOUNTED, {"first": 2}, token=dev))["myTasks"]
        with count_statements() as nothing:
            none = (await gql(TASK_PAGE_UNCOUNTED, {"first": 2}, token=idle))["myTasks"]
        assert [e["node"]["id"] for e in bare["edges"]] == [e["node"]["id"] for e in page["edges"]]
        assert none["edges"] == []
        (read,), (bare_read,) = counted.statements, uncounted.statements
        # the count is in the statement only when asked (resolvers/compiled/tasks.py): the bare
        # page selects neither totalCount nor pageInfo (whose hasNextPage counts the page's rows)
        assert "COUNT(" in read.upper() and "COUNT(" not in bare_read.upper()
        return page["totalCount"], counted.count, uncounted.count, nothing.count, counted.statements

    small = await costs()
    await bug_case(db, owner, SimpleNamespace(user_id=dev_id), items=27)
    large = await costs()
    assert (small[0], large[0]) == (3, 30)
    assert large[1:4] == small[1:4], large[4]
    assert small[1:4] == (1, 1, 1)  # one statement per page, compiled; nothing to do costs the same


async def test_each_task_is_listed_once_however_many_of_your_parties_reach_it(db, gql, make_user, make_actor):
    owner = await make_actor("sam")
    _, root = await make_user("root", admin=True)
    dev_id, dev = await make_user("dev")
    ann_id, ann = await make_user("ann")
    group = (await gql(CREATE_GROUP, {"name": "devs"}, token=root))["createGroup"]["group"]["id"]
    assert (await gql(ADD_MEMBER, {"g": group, "u": dev_id}, token=root))["addGroupMember"]["userErrors"] == []
    _, mine = await bug_case(db, owner, SimpleNamespace(user_id=dev_id), items=3)
    _, grouped = await bug_case(db, owner, SimpleNamespace(user_id=group), items=3)
    await bug_case(db, owner, SimpleNamespace(user_id=ann_id), items=2)
    sam_token = (await make_user("sam2", admin=True))[1]
    for case, parties in ((mine[0], [dev_id, group]), (grouped[0], [group, dev_id, ann_id])):
        both = await mutate(gql, REASSIGN, sam_token, caseId=case.id, role="assignee", partyIds=parties)
        assert both["userErrors"] == [], both["userErrors"]

    async def walk(token, first):
        ids, after, counts = [], None, set()
        while True:
            page = (await gql(TASK_PAGE, {"first": first, "after": after}, token=token))["myTasks"]
            ids += [e["node"]["id"] for e in page["edges"]]
            assert page["edges"][-1]["cursor"] == page["pageInfo"]["endCursor"]
            counts.add(page["totalCount"])
            if not page["pageInfo"]["hasNextPage"]:
                return ids, counts
            after = page["pageInfo"]["endCursor"]

    rows = await recomputed(db)
    for token, parties, cases in ((dev, {dev_id, group}, 6), (ann, {ann_id}, 3)):
        expected = sorted({instance for party, instance, *_ in rows if party in parties})
        assert len(expected) == cases  # one resolve per case, whichever party reaches it
        for first in (1, 2, 5):
            ids, counts = await walk(token, first)
            assert ids == expected and counts == {cases}, (first, ids)
