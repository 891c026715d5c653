"""bench/executor.py weighs the executor's fast field path: each of its reads must be answered
(without errors) both ways, and graphql-core's way must not outlive the measurement."""

from bench import executor, seed
from schema.execution import CasewayExecutor


async def test_every_read_is_measured_both_ways_and_the_fast_path_is_put_back(db):
    await seed.seed(db.url, 1, 2, 2)

    found = await executor.measure(db.url, requests=1, rounds=1, tune_gc=False)

    assert set(found) == set(executor.scenarios(await seed.driver_data(db.url)))
    assert all(fast > 0 and plain > 0 for fast, plain in found.values())
    assert CasewayExecutor.execute_fields is executor.FAST
