"""Every writer's transaction is published once it commits (models/unit_of_work.py,
server/publisher.py), the timer sweeper's as a mutation's: the webhooks of a TIME action and of
the AUTO action its firing enables are delivered at once, not at the job runner's next poll."""

from sqlalchemy import select

import engine
from models import Activity, Database
from server.settings import Settings
from tests.fixtures.documents import EXECUTE
from tests.fixtures.engine import new_subproject
from tests.fixtures.jobs import Shop, serving, until_answer
from tests.fixtures.receiver import SECRET, Receiver
from tests.fixtures.timers import case_of, make_items

WEBHOOK = [{"webhook": {"endpoint": "billing"}}]
LAPSING = {  # a timer a second after opening; its firing enables an automatic action
    "short_name": "lapsing",
    "states": {"open": {}, "late": {}, "escalated": {"terminal": True}},
    "actions": {
        "open": {"trigger": "init", "new_state": "open"},
        "lapse": {
            "trigger": "time",
            "enabled_states": ["open"],
            "timeout_seconds": 1,
            "new_state": "late",
            "side_effects": WEBHOOK,
        },
        "escalate": {"trigger": "auto", "enabled_states": ["late"], "new_state": "escalated", "side_effects": WEBHOOK},
    },
}


async def test_webhooks_of_a_time_action_and_the_auto_action_it_enables_are_delivered_at_once(
    db: Database, shop: Shop, billing: Receiver
):
    await shop.runner.stop()  # the server's runner is the only one
    endpoint = {"url": billing.url, "secret": SECRET, "timeout": 5, "serialize_by": "none"}
    # Both polls a minute away: only the firing's commit can wake the runner in time.
    settings = Settings(
        database_url=db.url, webhooks={"billing": endpoint}, job_poll_interval=60, timer_poll_interval=60
    )
    async with serving(db, settings):
        async with db.transaction() as s:
            await engine.define_workflow(s, actor=None, spec=LAPSING)
            sub = await new_subproject(s, shop.owner, workflow="lapsing")
            _, case = await engine.create_workflow_item(s, actor=shop.owner, subproject_id=sub.id, display_name="Late")
        await until_answer(lambda: len(billing.deliveries), lambda n: n == 2, within=10)
    async with db.read_session() as s:
        fired = {
            row.action: row.at
            for row in await s.execute(select(Activity.action, Activity.at).where(Activity.case_id == case.id))
            if row.action in ("lapse", "escalate")
        }
    delivered = {d.entry["action"]["shortName"]: d.at for d in billing.deliveries}
    assert set(delivered) == {"lapse", "escalate"}, delivered
    for action, at in delivered.items():  # from the timer's firing to the delivery
        assert at - fired[action].timestamp() < 0.5, (action, at - fired[action].timestamp())


LEAVE = {
    "short_name": "leave",
    "states": {"draft": {}, "waiting": {}, "expired": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "draft"},
        "submit": {"enabled_states": ["draft"], "new_state": "waiting"},
        "expire": {"enabled_states": ["waiting"], "new_state": "expired"},
    },
}


async def test_a_publisher_that_fails_neither_fails_a_committed_write_nor_hides_a_refusal(
    gql, db, make_user, monkeypatch
):
    """Issue 46: publishing runs after the transaction ended; when it broke, a write that had
    committed was answered as failed, and a refusal (rolled back) as "Unexpected error." in
    place of its own userErrors. The failure is logged; the client hears what happened."""
    _, admin = await make_user("root", admin=True)
    _, (item,) = await make_items(gql, admin, LEAVE, 1)
    case = await case_of(gql, admin, item)

    async def broken(work):
        raise RuntimeError("the publisher broke")

    monkeypatch.setattr(db, "publisher", broken)  # the app's, set when it was created
    done = await gql(EXECUTE, {"input": {"caseId": case["id"], "action": "submit"}}, token=admin)
    assert done["executeAction"]["userErrors"] == []
    assert done["executeAction"]["case"]["state"]["shortName"] == "waiting"
    assert (await case_of(gql, admin, item))["state"]["shortName"] == "waiting"  # committed, and said so
    refused = await gql(EXECUTE, {"input": {"caseId": case["id"], "action": "submit"}}, token=admin)
    assert [e["code"] for e in refused["executeAction"]["userErrors"]] == ["ACTION_NOT_ENABLED"]
    dry = await gql(EXECUTE, {"input": {"caseId": case["id"], "action": "expire", "dryRun": True}}, token=admin)
    assert (
        dry["executeAction"]["userErrors"] == [] and dry["executeAction"]["preview"]["state"]["shortName"] == "expired"
    )
