"""An API token's scopes narrow what its user may do, on every mutation of the schema (issue 45,
point 3): generated from the schema's Mutation type, the scope table (resolvers/token_scopes.py)
and the authorization matrix's inputs (tests/fixtures/authorization.py). A mutation the table does
not classify fails the first test; one the check forgets fails the second."""

import pytest
import strawberry

from engine.people.actors import Actor
from resolvers.context import Context
from resolvers.token_scopes import MUTATION_SCOPES
from schema.token_scope import scoped
from tests.fixtures.authorization import ACTORS, DONE, MUTATIONS
from tests.fixtures.authorization_scene import SCHEMA, build_scene, outcome, snapshot
from tests.fixtures.documents import CREATE_API_TOKEN

SCOPES = ("READ", "EXECUTE", "WRITE")
BELOW = {"EXECUTE": ("READ",), "WRITE": ("READ", "EXECUTE")}  # the scopes too low for a mutation


@pytest.fixture
async def actors(make_user) -> dict[str, str]:
    ids = {}
    for name in ACTORS:
        ids[name], _ = await make_user(name, admin=name == "admin")
    ids["victim"], _ = await make_user("victim")
    return ids


async def _api_tokens(gql, scene, actor: str) -> dict[str, str]:
    """scope -> a token of ``actor`` with that scope alone, given by the scene's admin."""
    tokens = {}
    for scope in SCOPES:
        wanted = {"userId": scene.ids[actor], "name": scene.unique(scope.lower()), "scopes": [scope]}
        made = (await gql(CREATE_API_TOKEN, {"input": wanted}, token=scene.tokens["admin"]))["createApiToken"]
        assert made["userErrors"] == [], made
        tokens[scope] = made["token"]
    return tokens


def test_every_mutation_of_the_schema_is_classified():
    in_schema = set(SCHEMA.mutation_type.fields)
    assert sorted(in_schema - set(MUTATION_SCOPES)) == [], "classify it in resolvers/token_scopes.py"
    assert sorted(set(MUTATION_SCOPES) - in_schema) == [], "the schema no longer has these mutations"
    assert {str(scope) for scope in MUTATION_SCOPES.values()} == {"EXECUTE", "WRITE"}  # READ runs none


async def test_a_token_below_a_mutations_scope_is_refused_and_changes_nothing(gql, db, actors):
    """The admin (who may do everything) with a READ token, and with an EXECUTE one for what needs
    WRITE: every mutation answers TOKEN_SCOPE (its sentence: tests/api/test_api_tokens.py), and no
    table changes."""
    scene = await build_scene(gql, db, actors)
    tokens = await _api_tokens(gql, scene, "admin")
    before = await snapshot(db)
    refused = []
    for name in sorted(SCHEMA.mutation_type.fields):
        for scope in BELOW[MUTATION_SCOPES[name]]:
            assert await outcome(gql, name, MUTATIONS[name], scene, tokens[scope]) == "TOKEN_SCOPE", (name, scope)
            assert await snapshot(db) == before, f"{name} refused to a {scope} token changed the database"
            refused.append(name)
    assert set(refused) == set(MUTATION_SCOPES)


async def test_a_token_with_the_scope_a_mutation_needs_meets_the_users_own_rules(gql, db, actors):
    """The viewer's token of exactly the scope each mutation needs is answered as the viewer's
    login token is (the matrix's outcome): refusals on one scene, changing nothing; what the
    viewer may do, done, each on a fresh scene."""
    scene = await build_scene(gql, db, actors)
    tokens = await _api_tokens(gql, scene, "viewer")
    before = await snapshot(db)
    done = []
    for name in sorted(MUTATION_SCOPES):
        row = MUTATIONS[name]
        if row.expected("viewer") == DONE:
            done.append(name)
            continue
        seen = await outcome(gql, name, row, scene, tokens[MUTATION_SCOPES[name]])
        assert seen == row.expected("viewer"), name
        assert await snapshot(db) == before, name
    assert done, "the viewer may do some mutations"
    for name in done:
        fresh = await build_scene(gql, db, actors)
        tokens = await _api_tokens(gql, fresh, "viewer")
        assert await outcome(gql, name, MUTATIONS[name], fresh, tokens[MUTATION_SCOPES[name]]) == DONE, name


async def test_a_payload_without_user_errors_is_refused_with_a_client_error():
    """No mutation of the schema has such a payload today; one added tomorrow is still held to
    the scope: a top-level error with the code TOKEN_SCOPE and the sentence, not an unexpected one."""

    @strawberry.type
    class Bare:
        done: bool = False

    @strawberry.type
    class Query:
        ping: bool = True

    @scoped
    @strawberry.type
    class Mutation:
        @strawberry.mutation
        async def touch(self) -> Bare:
            return Bare(done=True)

    reader = Actor(user_id="usr_r", login="r", party_ids=frozenset({"usr_r"}), token_id="tok_r", via="r", scope="READ")
    result = await strawberry.Schema(query=Query, mutation=Mutation).execute(
        "mutation { touch { done } }", context_value=Context(db=None, settings=None, actor=reader)
    )
    assert result.data is None
    assert result.errors[0].message == "This API token's scope is READ: touch needs a token with WRITE."
    assert result.errors[0].extensions == {"code": "TOKEN_SCOPE"}
