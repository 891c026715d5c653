"""What an operator's tools read (issue 24 point 5): /health, /ready and Prometheus /metrics."""

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families

from models import Database
from server.app import create_app
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.conditions import wait_until
from tests.fixtures.documents import CREATE_ITEM, EXECUTE
from tests.fixtures.timers import QUICK, case_in_state, make_items, running_app


async def _scrape(app_client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await app_client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _moved(before, after, name, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def test_health_and_ready_on_a_migrated_database(app_client):
    assert (await app_client.get("/health")).json() == {"status": "ok"}
    ready = await app_client.get("/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "background_tasks": "ok"},
    }


async def test_ready_says_the_database_is_not_migrated(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    app = create_app(Settings(database_url=db.url), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        ready = await http.get("/ready")
        assert (await http.get("/health")).status_code == 200  # up, but not ready
    await db.dispose()
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["database"] == "ok" and "run `caseway migrate`" in checks["migrations"]


async def test_ready_says_which_background_task_stopped(db):
    app = create_app(Settings(database_url=db.url, timer_poll_interval=60), db=db)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
            assert (await http.get("/ready")).status_code == 200
            await app.state.sweeper.stop()
            ready = await http.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["checks"]["background_tasks"] == "stopped: sweeper"


async def test_metrics_count_requests_by_operation_and_outcome(app_client, gql, make_user):
    _, token = await make_user("mia")
    before = await _scrape(app_client)
    for _ in range(2):
        await gql("query MetricsViewer { viewer { login } }", token=token)
    await gql.raw("query MetricsViewer { viewer { login } }")  # not authenticated: an error
    await gql.raw("query MetricsBroken { nope }")  # not valid: rejected
    await app_client.post("/graphql", content=b"{not json", headers={"content-type": "application/json"})
    after = await _scrape(app_client)
    requests = "caseway_graphql_requests_total"
    assert _moved(before, after, requests, operation="MetricsViewer", outcome="ok") == 2
    assert _moved(before, after, requests, operation="MetricsViewer", outcome="error") == 1
    assert _moved(before, after, requests, operation="MetricsBroken", outcome="rejected") == 1
    assert _moved(before, after, requests, operation="anonymous", outcome="refused") == 1
    count = "caseway_graphql_request_duration_seconds_count"
    assert _moved(before, after, count, operation="MetricsViewer") == 3


async def test_metrics_count_execute_action_by_workflow_and_outcome(app_client, gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Crash", "assigneeId": dev_id}},
            token=sam,
        )
    )["createWorkflowItem"]["workflowItem"]
    before = await _scrape(app_client)
    resolve = {"workflowItemId": item["id"], "action": "resolve", "resolution": "fixed"}
    assert (await gql(EXECUTE, {"input": {**resolve, "dryRun": True}}, token=dev))["executeAction"]["userErrors"] == []
    assert (await gql(EXECUTE, {"input": resolve}, token=dev))["executeAction"]["userErrors"] == []
    refused = (await gql(EXECUTE, {"input": {**resolve, "action": "no_such"}}, token=dev))["executeAction"]
    after = await _scrape(app_client)
    actions = "caseway_execute_action_total"
    assert _moved(before, after, actions, workflow="bug", outcome="dry_run") == 1
    assert _moved(before, after, actions, workflow="bug", outcome="ok") == 1
    code = refused["userErrors"][0]["code"]
    assert _moved(before, after, actions, workflow="-", outcome=code) == 1


async def test_metrics_show_live_subscribers_and_hub_lag(db, gql, make_user):
    """In process, with the lifespan running: the hub delivers and the gauge follows."""
    from tests.fixtures.documents import CREATE_PROJECT

    _, token = await make_user("lou")
    app = create_app(Settings(database_url=db.url, hub_poll_interval=0.2), db=db)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
            before = await _scrape(http)
            subscriber = await app.state.hub.subscribe()
            during = await _scrape(http)
            assert _moved(before, during, "caseway_live_subscribers") == 1
            await http.post(
                "/graphql",
                json={"query": CREATE_PROJECT, "variables": {"input": {"displayName": "Lag"}}},
                headers={"Authorization": f"Bearer {token}"},
            )
            async with asyncio.timeout(10):
                async for _ in subscriber.events():
                    break
            app.state.hub.unsubscribe(subscriber)
            after = await _scrape(http)
    assert _moved(before, after, "caseway_live_subscribers") == 0
    assert _moved(before, after, "caseway_event_hub_lag_seconds_count") >= 1


async def test_metrics_show_how_late_the_sweeper_fired_a_timer(db, make_user):
    async with running_app(db) as (app, gql):
        _, admin = await make_user("root", admin=True)
        before, fired = await _scrape(gql.http), app.state.sweeper.fired
        _, (item,) = await make_items(gql, admin, QUICK, 1)
        await case_in_state(gql, admin, item, "late")
        # The sweeper counts (and measures) what it fired after the commit a reader may have seen.
        await wait_until(lambda: app.state.sweeper.fired > fired, what="the sweeper counted its firing")
        after, fired = await _scrape(gql.http), app.state.sweeper.fired - fired
    assert _moved(before, after, "caseway_timer_lateness_seconds_count") == fired == 1
    assert 0 <= _moved(before, after, "caseway_timer_lateness_seconds_sum") < 5
