import pytest

pytest_plugins = [
    "tests.fixtures.database",
    "tests.fixtures.api",
    "tests.fixtures.live",
    "tests.fixtures.receiver",
    "tests.fixtures.jobs",
    "tests.fixtures.uploads",
    "tests.fixtures.s3",
    "tests.fixtures.hangs",
    "tests.fixtures.connections",
    "tests.fixtures.smtp",
    "tests.fixtures.deputies",
    "tests.fixtures.compiled",
    "tests.fixtures.oidc",
]


# The fixtures that make a database of the run's backend: a test marked backend_free uses none.
# Those built on them (db, gql, make_user, migrated_database, ...) are caught through them: a
# test's fixture names hold every fixture it reaches.
RUN_DATABASE_FIXTURES = frozenset(("database", "fresh_url", "empty_database"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/e2e/ is marked e2e (they start servers and CLIs), so
    `-m "not e2e"` leaves them out without each module having to say so. A test marked
    backend_free (run once, by the SQLite run) that takes a fixture of the run's database is a
    mistake in its marking: the collection stops and says which."""
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("backend_free"):
            reached = RUN_DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
            if reached:
                raise pytest.UsageError(f"{item.nodeid} is marked backend_free but uses {', '.join(sorted(reached))}")
