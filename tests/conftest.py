pytest_plugins = [
    "tests.fixtures.database",
    "tests.fixtures.api",
    "tests.fixtures.live",
    "tests.fixtures.receiver",
    "tests.fixtures.jobs",
]
