"""The compiled reads' plan cache and their fallback (resolvers/compiled/__init__.py): the plans
most recently used are kept, and a statement the database refuses is logged and the field
answered by the resolvers, as a client would have had it without the planner."""

import logging
from collections import OrderedDict

from sqlalchemy import text

import resolvers.compiled as compiled
from tests.fixtures.documents import PROJECT_COUNT

PROJECT_IDS = "{ projects { totalCount edges { node { id } } } }"
FIRST_PROJECT = "{ projects(first: 1) { totalCount } }"


async def test_the_plan_cache_drops_the_least_recently_used_plan(gql, make_user, monkeypatch):
    """Issue 46: the cache dropped its oldest plan first, however hot; with room for two, a plan
    used again just before a third arrives stays, and the one not used since goes."""
    _, token = await make_user("ada")
    monkeypatch.setattr(compiled, "_PLANS_KEPT", 2)
    monkeypatch.setattr(compiled, "_plans", OrderedDict())
    planned = []
    plan = compiled._plan

    def counting(executor, parent_type, details, args):
        planned.append(executor.operation.loc.source.body)
        return plan(executor, parent_type, details, args)

    monkeypatch.setattr(compiled, "_plan", counting)
    for document in (PROJECT_COUNT, PROJECT_IDS, PROJECT_COUNT, FIRST_PROJECT, PROJECT_COUNT, PROJECT_IDS):
        assert (await gql(document, token=token))["projects"]["totalCount"] == 0
    assert planned == [PROJECT_COUNT, PROJECT_IDS, FIRST_PROJECT, PROJECT_IDS]


async def test_a_statement_the_database_refuses_is_logged_and_the_resolvers_answer(
    gql, make_user, monkeypatch, same, caplog
):
    """Issue 46: a SQL error on the compiled road was the field's error (``projects`` null, an
    error in the body); it is logged and the resolvers answer, exactly as without the planner."""
    _, token = await make_user("ada")
    monkeypatch.setattr(compiled, "_plans", OrderedDict())
    statement = compiled.RootPlan.statement

    def broken(self, postgres, is_admin, variables):
        _, b = statement(self, postgres, is_admin, variables)
        return text("SELECT no_such_column FROM no_such_table"), b

    monkeypatch.setattr(compiled.RootPlan, "statement", broken)
    with caplog.at_level(logging.ERROR, logger="caseway.compiled"):
        body = await same(PROJECT_COUNT, None, token)
    assert "errors" not in body and body["data"] == {"projects": {"totalCount": 0}}
    assert [r.getMessage() for r in caplog.records if r.name == "caseway.compiled"] == [
        "a compiled read failed; the resolvers answer it"
    ]
