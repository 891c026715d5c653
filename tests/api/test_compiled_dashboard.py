"""The dashboard's own reads (web/src/api/documents.js, the text the pages send) answer the same
with the read planner and without, for every viewer of the authorization matrix; those the
planner covers cost one statement per root field. A page whose read stops compiling (a field
added to it without an SQL form) fails here, as does one that answers differently."""

import json
import re

import pytest

from tests.api import test_authorization_matrix as matrix
from tests.fixtures.authorization import ACTORS
from tests.fixtures.compiled_scene import ordered_scene
from tests.fixtures.dashboard_documents import dashboard_documents

actors = matrix.actors  # the matrix's users (a fixture), one per actor

# The dashboard's queries, the variables each is sent with over the scene, and whether the
# planner answers it (one statement per root field); the others are the resolvers'.
READS = {
    "PROJECTS": (lambda s: [{"filter": None}, {"filter": {"status": "OPEN"}}], True),
    "BOARD": (lambda s: [{"id": s.subproject, "first": 2, "after": None, "filter": None}], True),
    "ITEM": (lambda s: [{"id": s.item}, {"id": s.extra["i3"]}], False),
    # The history shows each entry's sentence, phrased for the viewer in Python (Activity.sentence
    # has no SQL form): the resolvers answer it, in a fixed number of statements.
    "HISTORY": (lambda s: [{"id": s.item, "after": None}, {"id": s.item, "after": s.extra["seqs"][0]}], False),
    "TASKS": (lambda s: [{}], True),
    "DOCUMENTS": (lambda s: [{"id": s.item}], False),
    "PERMISSIONS": (lambda s: [{"id": s.project}, {"id": s.subproject}, {"id": s.item}], True),
    "CARD_ACTIONS": (lambda s: [{"id": s.item}], False),
    "SEARCH": (lambda s: [{"query": "I2", "after": None}], False),
    "NOTIFICATIONS": (lambda s: [{}], False),
    "VIEWER": (lambda s: [{}], False),
    "API_TOKENS": (lambda s: [{"userId": s.ids["owner"]}, {"userId": s.ids["viewer"]}], False),
    "ITEM_JOBS": (lambda s: [{"id": s.item}], False),  # the scene's item has a FAILED and a STALLED job
    "STUCK_JOBS": (lambda s: [{}], False),
}


# A download link is signed for the moment it is made (server/documents.py): its expiry and
# signature differ between any two answers, so they are compared without them.
_SIGNED = re.compile(rb"exp=[0-9]+&sig=[0-9a-f]+")


async def _same(gql, resolvers_only, document, variables, token):
    """Both servers' answers, asserted equal byte for byte but for the links' signatures."""
    answers = []
    for client in (gql, resolvers_only):
        response = await client.http.post(
            "/graphql", json={"query": document, "variables": variables}, headers={"Authorization": f"Bearer {token}"}
        )
        answers.append((response.status_code, _SIGNED.sub(b"exp=E&sig=S", response.content)))
    assert answers[0] == answers[1], (json.loads(answers[0][1]), json.loads(answers[1][1]))
    return json.loads(answers[0][1])


def test_every_query_of_the_dashboard_is_here():
    """A query added to documents.js is added above (and so compared on both roads)."""
    queries = {name for name, text in dashboard_documents().items() if text.lstrip().startswith("query")}
    # A workflow's own reads (node(id:) of a Workflow) have no compiled road to compare.
    excluded = {"WORKFLOWS", "WORKFLOW", "WORKFLOW_FIELDS", "USERS", "ADMIN_USERS", "GROUPS", "VALIDATE_WORKFLOW"}
    assert queries - excluded == set(READS)


@pytest.mark.parametrize("name", sorted(READS))
async def test_a_dashboard_read_answers_the_same_for_every_viewer(
    gql,
    db,
    actors,
    resolvers_only,
    count_statements,
    name,
):
    scene = await ordered_scene(gql, db, actors)
    variables_of, compiled = READS[name]
    document = dashboard_documents()[name]
    for variables in variables_of(scene):
        for actor in ACTORS:
            token = scene.tokens[actor]
            body = await _same(gql, resolvers_only, document, variables, token)  # the token is remembered now
            assert "errors" not in body, body
            with count_statements() as counted:
                await gql.raw(document, variables, token=token)
            if compiled:
                assert counted.count == 1, (actor, counted.statements)
