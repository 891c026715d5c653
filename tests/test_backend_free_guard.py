"""The collection's check on the backend_free marker (tests/conftest.py): a test so marked runs
in the SQLite run alone, so one that reaches the run's database, directly or through a fixture
built on it, must stop the collection rather than go untested on PostgreSQL."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import pytest_collection_modifyitems

pytestmark = pytest.mark.backend_free


def _item(fixtures: list[str], *, marked: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        nodeid="tests/api/test_x.py::test_x",
        path=Path("/repo/tests/api/test_x.py"),
        fixturenames=fixtures,
        get_closest_marker=lambda name: object() if marked and name == "backend_free" else None,
        add_marker=lambda marker: None,
    )


@pytest.mark.parametrize("closure", [["make_user", "db", "database"], ["fresh_url", "tmp_path"], ["empty_database"]])
def test_a_marked_test_that_reaches_the_runs_database_stops_the_collection(closure):
    with pytest.raises(pytest.UsageError, match="test_x is marked backend_free but uses"):
        pytest_collection_modifyitems([_item(closure)])


def test_a_marked_test_of_its_own_files_and_an_unmarked_one_pass():
    pytest_collection_modifyitems([_item(["tmp_path", "monkeypatch"]), _item(["db", "database"], marked=False)])
