"""engine/people/deputies.py at the engine's API: a period's bounds to the microsecond, what a deputy
represents (the absent user and their groups, one level only, never admin rights), who stands
in for a group's member, and removal."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine.clock import SYSTEM_CLOCK, SettableClock
from engine.errors import DomainError
from engine.people import deputies, identity

T0 = datetime(2031, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock(monkeypatch) -> SettableClock:
    moved = SettableClock(T0)
    monkeypatch.setattr(SYSTEM_CLOCK, "now", moved.now)
    return moved


async def name(db, actor, deputy, **period):
    async with db.transaction() as s:
        return await deputies.set_deputy(s, actor=actor, deputy_id=deputy.user_id, **period)


async def refused(db, actor, deputy, **period):
    with pytest.raises(DomainError) as error:
        await name(db, actor, deputy, **period)
    return error.value.code, error.value.field


async def standing_in(db, deputy):
    async with db.session() as s:
        return {a.user_id: a for a in await deputies.standing_in(s, user_id=deputy.user_id)}


async def test_a_period_is_at_most_366_days_and_naive_times_are_utc(db, make_actor, clock):
    alice, bob, carol = await make_actor("alice"), await make_actor("bob"), await make_actor("carol")
    longest = await name(db, alice, bob, starts=T0, until=T0 + deputies.MAX_PERIOD)
    assert (longest.starts_at, longest.ends_at) == (T0, T0 + deputies.MAX_PERIOD)
    too_long = {"starts": T0, "until": T0 + deputies.MAX_PERIOD + timedelta(microseconds=1)}
    assert await refused(db, alice, carol, **too_long) == ("INVALID_INPUT", ["until"])
    naive = await name(db, alice, carol, starts=datetime(2031, 3, 2, 10, 0), until=datetime(2031, 3, 2, 11, 0))
    assert naive.starts_at == T0 + timedelta(hours=1)
    # Started already: it counts from its own `from`, and until must still be ahead.
    past = await name(db, carol, alice, starts=T0 - timedelta(days=1), until=T0 + timedelta(microseconds=1))
    assert past.starts_at == T0 - timedelta(days=1)
    assert await refused(db, carol, bob, starts=T0 - timedelta(days=1), until=T0) == ("INVALID_INPUT", ["until"])
    year_one = datetime(1, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=5)))
    assert await refused(db, carol, bob, starts=year_one, until=T0 + timedelta(hours=1)) == ("INVALID_INPUT", ["from"])


async def test_a_deputy_represents_the_absent_user_and_their_groups_from_from_until_until(db, make_actor, clock):
    root = await make_actor("root", admin=True)
    alice, bob, carol = await make_actor("alice", admin=True), await make_actor("bob"), await make_actor("carol")
    async with db.transaction() as s:
        group = await identity.create_group(s, actor=root, name="fixers")
        await identity.add_group_member(s, actor=root, group_id=group.id, user_id=alice.user_id)
    await name(db, alice, bob, starts=T0 + timedelta(hours=1), until=T0 + timedelta(hours=2))
    await name(db, bob, carol, until=T0 + timedelta(hours=3))  # carol stands in for bob, not for alice

    assert await standing_in(db, bob) == {}
    clock.set(T0 + timedelta(hours=1))
    (absent,) = (await standing_in(db, bob)).values()
    assert (absent.user_id, absent.party_ids, absent.is_admin) == (alice.user_id, {alice.user_id, group.id}, False)
    assert set(await standing_in(db, carol)) == {bob.user_id}
    async with db.session() as s:
        lent = await deputies.deputies_of_parties(s, {group.id, alice.user_id, carol.user_id})
    assert lent == {group.id: {bob.user_id}, alice.user_id: {bob.user_id}}
    clock.set(T0 + timedelta(hours=2))
    assert await standing_in(db, bob) == {}


async def test_only_its_two_users_and_admins_remove_a_deputyship(db, make_actor, clock):
    root = await make_actor("root", admin=True)
    alice, bob, carol = await make_actor("alice"), await make_actor("bob"), await make_actor("carol")
    made = [
        await name(db, alice, bob, starts=T0 + timedelta(days=d), until=T0 + timedelta(days=d + 1)) for d in (0, 2, 4)
    ]
    with pytest.raises(DomainError) as error:
        async with db.transaction() as s:
            await deputies.remove_deputy(s, actor=carol, id=made[0].id)
    assert (error.value.code, error.value.field) == ("NOT_FOUND", ["id"])
    for remover, deputyship in zip((alice, bob, root), made, strict=True):
        async with db.transaction() as s:
            assert await deputies.remove_deputy(s, actor=remover, id=deputyship.id) == deputyship.id
    assert await standing_in(db, bob) == {}
