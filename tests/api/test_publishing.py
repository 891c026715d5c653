"""Every writer's transaction is published once it commits (models/unit_of_work.py,
server/publisher.py), the timer sweeper's as a mutation's: the webhooks of a TIME action and of
the AUTO action its firing enables are delivered at once, not at the job runner's next poll."""

from sqlalchemy import select

import engine
from models import Activity, Database
from server.settings import Settings
from tests.fixtures.engine import new_subproject
from tests.fixtures.jobs import Shop, serving, until_answer
from tests.fixtures.receiver import SECRET, Receiver

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
    delivered = {d.entry["action"]: d.at for d in billing.deliveries}
    assert set(delivered) == {"lapse", "escalate"}, delivered
    for action, at in delivered.items():  # from the timer's firing to the delivery
        assert at - fired[action].timestamp() < 0.5, (action, at - fired[action].timestamp())
