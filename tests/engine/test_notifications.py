"""engine/notify/notifications.py: who hears of a case's activity, and at which level. Each user gets
at most one notification per activity, at the first level that applies (ASSIGNED, then ROLE,
CASE, WORKFLOW); the actor never hears of their own activity; nobody hears of an entry they may
not read, and a notification that was written is shown only while its reader still may read the
activity. Subscriptions are checked at the edge; marking read touches the reader's own only."""

import pytest
from sqlalchemy import select

import engine
from engine.errors import DomainError
from engine.notify import notifications
from engine.people import identity, permissions
from models import Notification
from tests.fixtures.builders import run
from tests.fixtures.engine import new_subproject


async def actor_of(db, actor):
    """The actor as it is now (its groups read again)."""
    async with db.session() as s:
        return await identity.actor_for(s, user_id=actor.user_id, login=actor.login, is_admin=actor.is_admin)


async def heard(db, activity_id):
    """{user id: level} of the notifications written for one activity."""
    async with db.session() as s:
        rows = await s.execute(
            select(Notification.recipient_id, Notification.level).where(Notification.activity_id == activity_id)
        )
        return dict(rows.all())


async def readable(db, actor):
    async with db.session() as s:
        rows = await s.scalars(select(Notification).where(notifications.readable_notifications(actor)))
        return [n.activity_id for n in rows]


async def subscribe(db, actor, level, target_id=None):
    async with db.transaction() as s:
        await notifications.subscribe(s, actor=actor, level=level, target_id=target_id)


@pytest.fixture
async def news(db, make_actor):
    """A review case whose `submit` enables `approve` for the reviewers (a group of two), with
    users who qualify for each level, some for several, and some for none."""
    names = ["author", "rev", "rev2", "rolefan", "quietfan", "casefan", "wffan", "snoop", "admin"]
    users = {name: await make_actor(name, admin=name == "admin") for name in names}
    async with db.transaction() as s:
        reviewers = await identity.create_group(s, actor=users["admin"], name="reviewers")
        for member in ("rev", "rev2"):
            await identity.add_group_member(
                s, actor=users["admin"], group_id=reviewers.id, user_id=users[member].user_id
            )
        await engine.define_workflow(
            s,
            actor=None,
            spec={
                "short_name": "news",
                "roles": {
                    "author": {"callbacks": ["creation_user"]},
                    "reviewer": {"static_parties": [reviewers.id]},
                    "watcher": {"static_parties": [users["rolefan"].user_id, users["quietfan"].user_id]},
                },
                "states": {"draft": {}, "review": {}, "done": {"terminal": True}},
                "actions": {
                    "submit": {"allowed_roles": ["author"], "enabled_states": ["draft"], "new_state": "review"},
                    "approve": {"assigned_role": "reviewer", "assigned_states": ["review"], "new_state": "done"},
                    "note": {"allowed_roles": ["author", "watcher"], "always_enabled": True},
                },
            },
        )
        sub = await new_subproject(s, users["author"], workflow="news")
        item, case = await engine.create_workflow_item(
            s, actor=users["author"], subproject_id=sub.id, display_name="Paper"
        )
        for name in ("casefan", "wffan"):  # may read the case's history by a grant
            await permissions.grant_raw(
                s, resource_id=sub.project_id, intent="project.viewHistory", party_id=users[name].user_id
            )
    for name, level, target in [
        ("rev", "CASE", item.id),  # assigned as well: one notification, ASSIGNED
        ("rev", "ROLE", None),
        ("rolefan", "ROLE", None),
        ("rolefan", "WORKFLOW", sub.id),  # a role player subscribed to ROLE: ROLE comes first
        ("casefan", "CASE", item.id),
        ("casefan", "WORKFLOW", sub.id),
        ("wffan", "WORKFLOW", sub.id),
        ("snoop", "CASE", item.id),  # may not read the history: hears nothing
        ("author", "CASE", item.id),  # the actor: hears nothing of their own activity
        ("admin", "WORKFLOW", "wf_" + "0" * 26),  # another workflow's subscriber
    ]:
        await subscribe(db, users[name], level, target)
    return users, sub, item, case


async def test_each_user_hears_once_at_the_first_level_that_applies(db, news):
    users, _, _, case = news
    submitted = await run(db, users["author"], case.id, "submit")
    by_user = {u.user_id: name for name, u in users.items()}
    got = {by_user[user_id]: level for user_id, level in (await heard(db, submitted.activity.id)).items()}
    assert got == {"rev": "ASSIGNED", "rev2": "ASSIGNED", "rolefan": "ROLE", "casefan": "CASE", "wffan": "WORKFLOW"}


async def test_nothing_is_written_for_the_actor_even_when_they_qualify(db, news):
    users, _, _, case = news
    await run(db, users["author"], case.id, "submit")
    noted = await run(db, users["rolefan"], case.id, "note")  # rolefan acts: the others hear of it
    by_user = {u.user_id: name for name, u in users.items()}
    got = {by_user[user_id]: level for user_id, level in (await heard(db, noted.activity.id)).items()}
    # approve stays enabled (nobody is newly assigned): rev hears as a subscribed role player,
    # the author by their CASE subscription (they play a role, but did not opt in to ROLE), rev2
    # (a role player who subscribed to nothing) not at all.
    assert got == {"rev": "ROLE", "author": "CASE", "casefan": "CASE", "wffan": "WORKFLOW"}


async def test_a_notification_shows_only_while_its_reader_may_read_the_activity(db, news):
    users, sub, _, case = news
    submitted = await run(db, users["author"], case.id, "submit")
    casefan = users["casefan"]
    assert await readable(db, casefan) == [submitted.activity.id]
    async with db.session() as s:
        assert await notifications.unread_count(s, actor=casefan) == 1
    async with db.transaction() as s:
        await permissions.revoke(
            s, actor=users["admin"], resource_id=sub.project_id, intent="project.viewHistory", party_id=casefan.user_id
        )
    assert await readable(db, casefan) == []  # hidden as if never written
    async with db.session() as s:
        assert await notifications.unread_count(s, actor=casefan) == 0
    async with db.transaction() as s:
        await permissions.grant_raw(
            s, resource_id=sub.project_id, intent="project.viewHistory", party_id=casefan.user_id
        )
    assert await readable(db, casefan) == [submitted.activity.id]  # kept: shown again


async def test_marking_read_touches_only_the_readers_own_notifications(db, news):
    users, _, _, case = news
    first = await run(db, users["author"], case.id, "submit")
    second = await run(db, users["author"], case.id, "note")
    rev, rev2 = await actor_of(db, users["rev"]), await actor_of(db, users["rev2"])
    async with db.session() as s:
        mine = {
            n.activity_id: n.id
            for n in await s.scalars(select(Notification).where(Notification.recipient_id == rev.user_id))
        }
        theirs = await s.scalar(
            select(Notification.id).where(
                Notification.recipient_id == rev2.user_id, Notification.activity_id == first.activity.id
            )
        )
    with pytest.raises(DomainError) as refused:  # someone else's id is as good as none, and marks nothing
        async with db.transaction() as s:
            await notifications.mark_read(s, actor=rev, ids=[mine[first.activity.id], theirs])
    assert (refused.value.code, refused.value.field) == ("NOT_FOUND", ["ids"])
    async with db.session() as s:
        assert await notifications.unread_count(s, actor=rev) == 2
    async with db.transaction() as s:
        left = await notifications.mark_read(s, actor=rev, ids=[mine[first.activity.id]])
    assert left == 1  # rev's second is still unread
    async with db.session() as s:
        assert await notifications.unread_count(s, actor=rev2) == 1  # rev's call did not read rev2's
    async with db.transaction() as s:
        assert await notifications.mark_read(s, actor=rev, ids=None, all=True) == 0
    async with db.session() as s:
        assert await notifications.unread_count(s, actor=rev2) == 1
    assert second.activity.id in mine
    with pytest.raises(DomainError) as error:
        async with db.transaction() as s:
            await notifications.mark_read(s, actor=rev, ids=[])
    assert (error.value.code, error.value.field, error.value.message) == (
        "INVALID_INPUT",
        ["ids"],
        "Give ids, or all: true.",
    )


CASE_TARGET = "A CASE subscription needs the id of a WorkflowItem or Case."
WORKFLOW_TARGET = "A WORKFLOW subscription needs the id of a Subproject or Workflow."


@pytest.mark.parametrize(
    ("level", "target", "field", "message"),
    [
        ("ASSIGNED", None, ["level"], "Notifications of your own assignments are always on."),
        ("EVERYTHING", None, ["level"], "level is ROLE, CASE or WORKFLOW."),
        ("CASE", None, ["targetId"], CASE_TARGET),
        (
            "CASE",
            "sub_01J00000000000000000000000",
            ["targetId"],
            "A CASE subscription needs the id of a WorkflowItem or Case.",
        ),
        (
            "WORKFLOW",
            "wfi_01J00000000000000000000000",
            ["targetId"],
            "A WORKFLOW subscription needs the id of a Subproject or Workflow.",
        ),
    ],
)
async def test_a_subscription_is_checked_at_the_edge(db, make_actor, level, target, field, message):
    user = await make_actor("user")
    with pytest.raises(DomainError) as error:
        await subscribe(db, user, level, target)
    assert (error.value.code, error.value.field, error.value.message) == ("INVALID_INPUT", field, message)


async def test_subscribing_twice_keeps_one_and_unsubscribing_removes_that_one_only(db, news):
    users, sub, _, case = news
    wffan = users["wffan"]
    await subscribe(db, wffan, "WORKFLOW", sub.id)  # already subscribed: still one
    await subscribe(db, wffan, "WORKFLOW", case.workflow_id)  # the same level, another target
    async with db.transaction() as s:
        await notifications.unsubscribe(s, actor=wffan, level="WORKFLOW", target_id=sub.id)
    submitted = await run(db, users["author"], case.id, "submit")
    assert (await heard(db, submitted.activity.id))[wffan.user_id] == "WORKFLOW"  # by the workflow's
    async with db.transaction() as s:
        await notifications.unsubscribe(s, actor=wffan, level="WORKFLOW", target_id=case.workflow_id)
    noted = await run(db, users["author"], case.id, "note")
    assert wffan.user_id not in await heard(db, noted.activity.id)


async def test_a_role_subscription_ignores_a_target(db, news):
    """ROLE covers every case where the user plays a role: a target given with it is dropped."""
    users, _, item, case = news
    async with db.transaction() as s:
        await notifications.unsubscribe(s, actor=users["rolefan"], level="ROLE", target_id=None)
    await subscribe(db, users["rolefan"], "ROLE", item.id)
    submitted = await run(db, users["author"], case.id, "submit")
    assert (await heard(db, submitted.activity.id))[users["rolefan"].user_id] == "ROLE"
