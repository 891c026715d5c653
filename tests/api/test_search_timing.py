"""Search's time does not grow with rows the asker may not see (issue 47, finding 6: answers came
3-6 ms later when hidden rows held the word, a side channel on what others wrote). The costly
part of a search is ranking (SQLite's ``bm25``, PostgreSQL's ``ts_rank`` over a ``to_tsvector``
of each row); it must read only rows that passed the visibility rule. Shown on the statement
each database is sent, for a viewer who is not an admin."""

import re

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from engine.people.actors import Actor
from resolvers.search import page_statement

VIEWER = Actor(user_id="usr_1", login="ada", party_ids=frozenset({"usr_1", "grp_1"}))


def statement(on_sqlite: bool, counted: bool) -> str:
    built = page_statement(VIEWER, sqlite=on_sqlite, found=["invoice", "7"], cursor=None, limit=20, counted=counted)
    return str(built.compile(dialect=sqlite.dialect() if on_sqlite else postgresql.dialect()))


def cte(sql: str, name: str) -> str:
    """The text of a common table expression's definition, to its closing parenthesis."""
    start = sql.index(f"{name} AS MATERIALIZED \n(") + len(f"{name} AS MATERIALIZED \n(")
    depth, at = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(sql[at], 0)
        at += 1
    return sql[start : at - 1]


VISIBILITY = "FROM permission \nWHERE permission.resource_id = "  # visible_filter's probe of a grant


@pytest.mark.parametrize("counted", [True, False])
def test_sqlite_ranks_only_the_rows_the_viewer_may_see(counted):
    sql = statement(True, counted)
    assert sql.count("bm25(") == 1
    assert "bm25(" not in cte(sql, "hits")  # the words' index read: ids only, nothing ranked
    shown = cte(sql, "shown")
    assert VISIBILITY in shown and "bm25(" not in shown  # the rule, before any ranking
    ranking = cte(sql, "matches")
    assert "bm25(" in ranking and "IN (SELECT shown.id \nFROM shown)" in ranking


@pytest.mark.parametrize("counted", [True, False])
def test_postgresql_ranks_only_the_rows_the_viewer_may_see(counted):
    sql = statement(False, counted)
    rankings = [m.start() for m in re.finditer(r"ts_rank\(", sql)]
    assert len(rankings) == 3  # projects, subprojects, items
    for at, kind in zip(rankings, ("project", "subproject", "workflow_item"), strict=True):
        # ts_rank reads the rows of found_<kind>, and found_<kind> is the matches the rule let through
        found = sql[at : sql.index(f") AS found_{kind}", at)]
        assert found.startswith(f"ts_rank(to_tsvector('simple', translate(found_{kind}.display_name")
        assert VISIBILITY in found
