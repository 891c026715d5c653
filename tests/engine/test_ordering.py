"""engine/tree/ordering.py: a subproject's explicit order of its items, then creation order;
``reorder`` replacing it whole (refusing duplicates and ids that are not visible items of the
subproject, the hidden ones exactly as the missing ones); and in an ORDERED subproject an item
that may not close while an item before it in that order is open."""

import pytest
from sqlalchemy import select

import engine
from engine.errors import DomainError
from engine.people import permissions
from engine.tree.ordering import ordered
from models import Activity, Subproject
from tests.fixtures.builders import bug_case, run, state_of


@pytest.mark.parametrize(
    ("item_ids", "ordering", "expected"),
    [
        (["i1", "i2", "i3"], [], ["i1", "i2", "i3"]),  # nothing listed: creation order (ids are time-ordered)
        (["i3", "i1", "i2"], [], ["i1", "i2", "i3"]),
        (["i1", "i2", "i3"], ["i3", "i1"], ["i3", "i1", "i2"]),  # listed first, the rest after
        (["i1", "i2", "i3"], ["i2", "gone", "i1"], ["i2", "i1", "i3"]),  # a listed id no longer there: skipped
        (["i1", "i2"], ["i2", "i2", "i1"], ["i2", "i1"]),  # listed twice: its first place
        (["i4", "i1", "i3", "i2"], ["i3"], ["i3", "i1", "i2", "i4"]),
    ],
)
def test_listed_items_come_first_in_their_order_then_the_rest_by_creation(item_ids, ordering, expected):
    assert ordered(item_ids, ordering) == expected


async def items_of(db, owner, count, *, mode="UNORDERED"):
    sub, cases = await bug_case(db, owner, owner, workflow="simple", mode=mode, items=count)
    return sub, [case.object_id for case in cases], cases


async def reorder(db, actor, sub_id, ordering):
    async with db.transaction() as s:
        return await engine.reorder(s, actor=actor, subproject_id=sub_id, ordering=ordering)


async def stored_ordering(db, sub_id):
    async with db.session() as s:
        return (await s.get(Subproject, sub_id)).workflow_item_ordering


async def reordered_entries(db, sub_id):
    async with db.session() as s:
        rows = await s.scalars(
            select(Activity).where(Activity.kind == "workflow_items_reordered", Activity.subproject_id == sub_id)
        )
        return [entry.data["ordering"] for entry in rows]


async def test_reorder_replaces_the_whole_ordering_and_logs_each_change_once(db, make_actor):
    owner = await make_actor("owner")
    sub, (a, b, c), _ = await items_of(db, owner, 3)
    await reorder(db, owner, sub.id, [c, a])
    assert await stored_ordering(db, sub.id) == [c, a]
    await reorder(db, owner, sub.id, [b])  # replaced, not merged
    assert await stored_ordering(db, sub.id) == [b]
    await reorder(db, owner, sub.id, [b])  # the same again: nothing to log
    assert await reordered_entries(db, sub.id) == [[c, a], [b]]


async def refusal(db, actor, sub_id, ordering):
    with pytest.raises(DomainError) as error:
        await reorder(db, actor, sub_id, ordering)
    return error.value.code, error.value.field, error.value.message


async def test_a_bad_ordering_is_refused_naming_the_entry_and_changes_nothing(db, make_actor):
    owner = await make_actor("owner")
    sub, (a, b, c), _ = await items_of(db, owner, 3)
    _, (foreign,), _ = await items_of(db, owner, 1)
    await reorder(db, owner, sub.id, [b, a])
    assert await refusal(db, owner, sub.id, [a, c, a]) == (
        "INVALID_INPUT",
        ["ordering"],
        "The ordering names an item twice.",
    )
    assert await refusal(db, owner, sub.id, [a, foreign]) == (  # an item, but of another subproject
        "UNKNOWN_ITEM",
        ["ordering", "1"],
        f"{foreign!r} is not a workflow item of this subproject.",
    )
    assert (await refusal(db, owner, sub.id, [c, b, "wfi_NOPE"]))[:2] == ("UNKNOWN_ITEM", ["ordering", "2"])
    too_long = [a] * 10_001
    assert (await refusal(db, owner, sub.id, too_long))[:2] == ("INVALID_INPUT", ["ordering"])
    assert await stored_ordering(db, sub.id) == [b, a]
    assert await reordered_entries(db, sub.id) == [[b, a]]


async def test_an_item_the_actor_may_not_view_is_refused_as_a_missing_one(db, make_actor):
    """The sorter may reorder the subproject but was given it after its items existed, so it may
    view none of them (a new item copies its subproject's grants when it is created)."""
    owner, sorter = await make_actor("owner"), await make_actor("sorter")
    sub, (a, _), _ = await items_of(db, owner, 2)
    async with db.transaction() as s:
        for intent in ("subproject.view", "subproject.reorderWorkflowItems"):
            await permissions.grant_raw(s, resource_id=sub.id, intent=intent, party_id=sorter.user_id)
    async with db.transaction() as s:
        _, late_case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Late")
    late = late_case.object_id
    hidden = await refusal(db, sorter, sub.id, [late, a])
    missing = await refusal(db, sorter, sub.id, [late, "wfi_NOPE"])
    assert hidden == ("UNKNOWN_ITEM", ["ordering", "1"], f"{a!r} is not a workflow item of this subproject.")
    assert missing[:2] == hidden[:2]
    await reorder(db, sorter, sub.id, [late])  # the one it may view
    assert await stored_ordering(db, sub.id) == [late]


async def test_reordering_needs_the_intent_on_the_subproject(db, make_actor):
    owner, viewer, stranger = await make_actor("owner"), await make_actor("viewer"), await make_actor("stranger")
    sub, (a, b), _ = await items_of(db, owner, 2)
    async with db.transaction() as s:
        await permissions.grant_raw(s, resource_id=sub.id, intent="subproject.view", party_id=viewer.user_id)
    assert (await refusal(db, viewer, sub.id, [b, a]))[:2] == ("NOT_ALLOWED", ["subprojectId"])
    assert (await refusal(db, stranger, sub.id, [b, a]))[:2] == ("NOT_FOUND", ["subprojectId"])
    assert await stored_ordering(db, sub.id) == []


async def test_in_an_ordered_subproject_an_item_closes_only_after_the_open_items_before_it(db, make_actor):
    """The order is the explicit one (c, a, b), not creation order; a suspended item before is
    still open, a cancelled one is not."""
    owner = await make_actor("owner")
    sub, (a, b, c), cases = await items_of(db, owner, 3, mode="ORDERED")
    case_a, case_b, case_c = (case.id for case in cases)
    await reorder(db, owner, sub.id, [c, a, b])
    with pytest.raises(DomainError) as error:
        await run(db, owner, case_b, "close")
    assert (error.value.code, error.value.message) == (
        "PREVIOUS_ITEMS_OPEN",
        "2 workflow item(s) before this one are still open; close them first.",
    )
    with pytest.raises(DomainError) as error:
        await run(db, owner, case_a, "close")
    assert error.value.message == "1 workflow item(s) before this one are still open; close them first."
    await run(db, owner, case_c, "close")  # first in the order: nothing before it
    async with db.transaction() as s:
        await engine.suspend_case(s, actor=owner, case_id=case_a)
    with pytest.raises(DomainError) as error:
        await run(db, owner, case_b, "close")
    assert error.value.code == "PREVIOUS_ITEMS_OPEN"  # suspended is still open
    async with db.transaction() as s:
        await engine.cancel_case(s, actor=owner, case_id=case_a)
    await run(db, owner, case_b, "close")
    assert [(await state_of(db, case))[:2] for case in (case_c, case_b)] == [("closed", "COMPLETED")] * 2


async def test_in_an_unordered_subproject_items_close_in_any_order(db, make_actor):
    owner = await make_actor("owner")
    sub, (a, b), cases = await items_of(db, owner, 2)
    await reorder(db, owner, sub.id, [a, b])
    await run(db, owner, cases[1].id, "close")
    assert (await state_of(db, cases[1].id))[:2] == ("closed", "COMPLETED")
