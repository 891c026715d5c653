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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/e2e/ is marked e2e (they start servers and CLIs), so
    `-m "not e2e"` leaves them out without each module having to say so."""
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)
