"""A floor on how often one case's timers fire (issue 47, finding 3: a 1-second TIME action that
left its case where it is enabled again wrote to the log every second, for ever). A timer
enabled by a timer's firing falls due CASEWAY_TIMER_MIN_INTERVAL (60 s) after it at the soonest;
the definition warns of the repeat (TIMER_REPEATS) and names the floor."""

from datetime import datetime, timedelta

import httpx

from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.documents import RUN_DUE
from tests.fixtures.timers import case_of, make_items

# `tick` fires a second after it is enabled and leaves the case where it is enabled again.
TICKING = {
    "short_name": "ticking",
    "states": {"open": {}, "closed": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "tick": {"trigger": "time", "enabled_states": ["open"], "timeout_seconds": 1},
        "close": {"enabled_states": ["open"], "new_state": "closed"},
    },
}
# `ping` and `pong` enable each other, a second apart each.
PING_PONG = {
    "short_name": "ping_pong",
    "states": {"a": {}, "b": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "a"},
        "ping": {"trigger": "time", "enabled_states": ["a"], "timeout_seconds": 1, "new_state": "b"},
        "pong": {"trigger": "time", "enabled_states": ["b"], "timeout_seconds": 1, "new_state": "a"},
        "finish": {"enabled_states": ["a", "b"], "new_state": "done"},
    },
}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def fire(gql, token, when: datetime) -> list[str]:
    answer = (await gql(RUN_DUE, {"input": {"now": when.isoformat()}}, token=token))["runDueTimers"]
    assert answer["userErrors"] == []
    return [entry["action"] for entry in answer["fired"]]


async def test_a_timer_that_repeats_every_second_fires_at_most_once_a_minute(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, (item,) = await make_items(gql, admin, TICKING, 1)
    first = at((await case_of(gql, admin, item))["timers"][0]["fireAt"])

    assert await fire(gql, admin, first) == ["tick"]
    (timer,) = (await case_of(gql, admin, item))["timers"]
    assert at(timer["fireAt"]) == first + timedelta(seconds=60)  # not first + 1 s
    for seconds in (1, 2, 30, 59):  # a sweep every second, as a busy server makes: nothing
        assert await fire(gql, admin, first + timedelta(seconds=seconds)) == []
    assert await fire(gql, admin, first + timedelta(seconds=60)) == ["tick"]
    case = await case_of(gql, admin, item)
    assert [e["node"]["action"] for e in case["log"]["edges"]].count("tick") == 2


async def test_timers_that_enable_each_other_are_held_to_the_floor_too(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, (item,) = await make_items(gql, admin, PING_PONG, 1)
    first = at((await case_of(gql, admin, item))["timers"][0]["fireAt"])
    assert await fire(gql, admin, first) == ["ping"]
    assert await fire(gql, admin, first + timedelta(seconds=1)) == []
    assert await fire(gql, admin, first + timedelta(seconds=60)) == ["pong"]


async def test_the_floor_is_a_setting_and_zero_fires_as_the_spec_says(db, make_user):
    app = create_app(Settings(database_url=db.url, timer_min_interval=0), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        gql = GraphQLClient(http)
        _, admin = await make_user("root", admin=True)
        _, (item,) = await make_items(gql, admin, TICKING, 1)
        first = at((await case_of(gql, admin, item))["timers"][0]["fireAt"])
        assert await fire(gql, admin, first) == ["tick"]
        assert await fire(gql, admin, first + timedelta(seconds=1)) == ["tick"]


async def test_the_definition_warns_of_the_repeat_and_names_the_floor(gql, make_user):
    _, admin = await make_user("root", admin=True)
    validated = await gql(
        "query($spec: JSON!) { validateWorkflow(spec: $spec) { diagnostics { code severity path message } } }",
        {"spec": TICKING},
        token=admin,
    )
    [warning] = validated["validateWorkflow"]["diagnostics"]
    assert (warning["code"], warning["severity"], warning["path"]) == ("TIMER_REPEATS", "WARNING", ["actions", "tick"])
    assert "CASEWAY_TIMER_MIN_INTERVAL" in warning["message"]
