"""The fast executor (schema/execution.py) answers exactly as graphql-core does: the same data,
the same errors at the same paths, the same nulls propagated, on Caseway's schema and on a small
schema built to hit every branch (attributes, context-only resolvers, async values, lists,
non-null violations, type mismatches, unions and interfaces)."""

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import pytest
import strawberry
from strawberry.extensions import MaskErrors

from resolvers.context import Context
from schema import Mutation, Query, Subscription
from schema import schema as caseway_schema
from schema.activity import Activity
from schema.case import Case
from schema.execution import CasewayExecutor, context_only
from schema.identity import Group, User
from schema.item import WorkflowItem
from schema.project import Project, Subproject
from schema.workflow import Workflow
from server.settings import Settings
from tests.fixtures.builders import grow
from tests.fixtures.documents import NESTED

# --- a small schema that reaches every branch of the executor ---------------------------------


@dataclass
class Row:
    id: str
    name: str | None
    score: int | None = 1


@dataclass(frozen=True)
class FrozenRow:
    """Immutable, like Caseway's rows and specs: completed once per selection when met again."""

    id: str
    name: str | None
    score: int | None = 1


@strawberry.interface
class Named:
    id: strawberry.ID
    name: str | None

    @classmethod
    def resolve_type(cls, obj: Any, info: Any, abstract_type: Any) -> str | None:
        return {"cat": "Cat", "dog": "Dog"}.get(obj.id.split("_")[0])


@strawberry.type
class Cat(Named):
    score: int

    is_type_of = classmethod(lambda cls, obj, info: obj.id.startswith("cat_"))

    @strawberry.field
    @context_only
    def twice(self, info: strawberry.Info) -> int:
        return self.score * 2 * info.context["factor"]  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    async def later(self, info: strawberry.Info) -> str:
        return f"later {self.name}"

    @strawberry.field
    @context_only
    def broken(self, info: strawberry.Info) -> str | None:
        raise ValueError("broken on purpose")

    @strawberry.field
    @context_only
    def strict_broken(self, info: strawberry.Info) -> str:
        raise ValueError("strict and broken")

    @strawberry.field
    @context_only
    def friends(self, info: strawberry.Info) -> list["Cat"]:
        return info.context["friends"]

    @strawberry.field
    @context_only
    def maybe_friends(self, info: strawberry.Info) -> list["Cat | None"] | None:
        return [*info.context["friends"], None]

    @strawberry.field
    @context_only
    def awaited_friends(self, info: strawberry.Info) -> list["Cat"]:
        async def one(cat: Row) -> Row:
            return cat

        return [one(c) for c in info.context["friends"]]

    @strawberry.field
    @context_only
    def pets(self, info: strawberry.Info) -> list[Annotated["Cat | Dog", strawberry.union("Pet")]]:
        return info.context["pets"]

    @strawberry.field
    @context_only
    def everyone(self, info: strawberry.Info) -> list[Named]:
        return info.context["pets"]

    @strawberry.field
    def with_info(self, info: strawberry.Info) -> str:
        return f"{info.field_name} at {info.path.key}"


@strawberry.type
class Dog(Named):
    is_type_of = classmethod(lambda cls, obj, info: obj.id.startswith("dog_"))


@strawberry.type
class TinyQuery:
    @strawberry.field
    def cat(self, info: strawberry.Info) -> Cat | None:
        return info.context["cat"]

    @strawberry.field
    def cats(self, info: strawberry.Info) -> list[Cat]:
        return info.context["friends"]

    @strawberry.field
    @context_only
    def herd(self, info: strawberry.Info) -> list[Cat | None]:
        return info.context["herd"]


@strawberry.type
class TinySubscription:
    @strawberry.subscription
    async def cats(self, info: strawberry.Info, prefix: str) -> AsyncGenerator[Cat | None, None]:
        for cat in info.context["stream"]:
            yield cat


def _tiny(executor: type | None) -> strawberry.Schema:
    kwargs = {"execution_context_class": executor} if executor else {}
    return strawberry.Schema(query=TinyQuery, subscription=TinySubscription, types=[Cat, Dog], **kwargs)


TINY_QUERIES = [
    "{ cat { id name score twice later withInfo } }",
    "{ cat { broken name } }",
    "{ cat { strictBroken name } }",  # non-null error nulls the nearest nullable parent
    "{ cats { name score } }",  # a null score in a non-null field nulls the whole list
    "{ cat { friends { name } maybeFriends { name twice } awaitedFriends { name later } } }",
    "{ cat { pets { __typename ... on Cat { name score } ... on Dog { id name } } } }",
    "{ cat { everyone { __typename id ... on Cat { twice } } } }",
    "{ cat { a: name b: name ...F } } fragment F on Cat { name id score }",
    "query($skip: Boolean!) { cat { name @skip(if: $skip) score @include(if: $skip) } }",
    # the same immutable rows again and again, under leaf-only and nested selections
    "{ herd { name score } again: herd { id } nested: herd { name friends { name } } }",
    "{ herd { name twice } }",  # a resolver in the selection: completed every time
]


@pytest.mark.parametrize("query", TINY_QUERIES)
async def test_fast_executor_matches_graphql_core(query: str) -> None:
    friends = [Row("cat_2", "Mia"), Row("cat_3", "Leo", None)]
    tom, bad = FrozenRow("cat_5", "Tom", 2), FrozenRow("cat_6", "Bad", None)  # Bad: null in non-null score
    context = {
        "herd": [tom, tom, bad, tom, None, bad],
        "cat": Row("cat_1", "Tom", 3),
        "friends": friends,
        "pets": [Row("dog_1", "Rex"), Row("cat_4", "Kit")],
        "factor": 2,
    }
    variables = {"skip": True}
    fast = await _tiny(CasewayExecutor).execute(query, variable_values=variables, context_value=context)
    reference = await _tiny(None).execute(query, variable_values=variables, context_value=context)
    assert fast.data == reference.data
    assert [(e.message, e.path) for e in fast.errors or []] == [(e.message, e.path) for e in reference.errors or []]
    if "cats" in query:  # the fixture really exercises what it claims to
        assert reference.errors and reference.data is None


async def test_a_type_mismatch_is_the_same_error() -> None:
    context = {"cat": Row("dog_9", "not a cat"), "friends": [], "pets": [], "factor": 1}
    fast = await _tiny(CasewayExecutor).execute("{ cat { name } }", context_value=context)
    reference = await _tiny(None).execute("{ cat { name } }", context_value=context)
    assert fast.data == reference.data == {"cat": None}
    assert [e.message for e in fast.errors] == [e.message for e in reference.errors]


async def _events(schema: strawberry.Schema, context: dict[str, Any]) -> list[tuple[Any, list[Any]]]:
    document = 'subscription { cats(prefix: "x") { name score twice broken friends { name broken } } }'
    stream = await schema.subscribe(document, context_value=context)
    return [(r.data, [(e.message, e.path) for e in r.errors or []]) async for r in stream]


async def test_subscription_events_match_graphql_core() -> None:
    """Each event: the root field is the event itself, completed like any other value (nulls,
    errors at their paths, a value of the wrong type)."""
    stream = [Row("cat_1", "Tom", 3), None, Row("cat_3", "Leo", None), Row("dog_1", "Rex"), FrozenRow("cat_5", "Ti")]
    context = {"stream": stream, "friends": [Row("cat_2", "Mia")], "factor": 2}
    fast = await _events(_tiny(CasewayExecutor), context)
    reference = await _events(_tiny(None), context)
    assert fast == reference
    assert len(fast) == 5 and fast[1] == ({"cats": None}, []) and fast[2][0] == {"cats": None}


class _RecordingExecutor(CasewayExecutor):
    made: ClassVar[list[Any]] = []

    def build_per_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        self.made.append(executor)
        return executor


async def test_a_long_subscription_keeps_no_memo_per_event() -> None:
    """Memos are per execution: event 300 starts with as little cached as event 1."""
    context = {"stream": [Row(f"cat_{n}", str(n)) for n in range(300)], "friends": [], "factor": 1}
    events = await _events(_tiny(_RecordingExecutor), context)
    first, last = _RecordingExecutor.made[0], _RecordingExecutor.made[-1]
    assert len(events) == 300
    assert len(last._relevant_sub_fields) == len(first._relevant_sub_fields) <= 2
    assert len(last._plans) == len(first._plans) <= 3


# --- Caseway's own schema, on real data ---------------------------------------------------------


def _reference_schema() -> strawberry.Schema:
    """Caseway's schema on graphql-core's own executor."""
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Project, Subproject, WorkflowItem, Case, Workflow, Activity, User, Group],
        extensions=[MaskErrors],
        config=caseway_schema.config,  # the same scalars (our JSON)
    )


async def test_caseway_reads_match_graphql_core(db, gql, make_user) -> None:
    from engine.people import identity

    _, token = await make_user("alice")
    _, other = await make_user("bob")
    await grow(gql, token, 1, 2, 3)
    reference = _reference_schema()
    queries = [
        NESTED,
        "{ viewer { login } myTasks { totalCount edges { node { action { shortName prettyName } "
        "assignees { __typename ... on User { login } } case { status version states { shortName terminal } "
        "myActions { action { shortName } } workflowItem { displayName status } } } } } }",
        "{ projects { edges { node { id allowedIntents permissions { intent parties { __typename } } "
        "history(first: 5) { totalCount edges { node { kind seq actor { login } project { displayName } } } } } } } }",
        "{ workflows { edges { node { shortName version roles { shortName } states { shortName terminal } "
        "actions { shortName trigger enabledStates assignedRole } } } } }",
    ]
    nested_items = {}
    for viewer in (token, other):
        for query in queries:
            results = []
            for candidate in (caseway_schema, reference):
                ctx = Context(db=db, settings=Settings())
                ctx.actor = await identity.authenticate(ctx.session, viewer)
                results.append(await candidate.execute(query, context_value=ctx))
                await ctx.close()
            fast, slow = results
            assert not slow.errors, slow.errors
            assert fast.errors is None and fast.data == slow.data
            if query is NESTED:
                nested_items[viewer] = [
                    i["node"]["case"]["state"]["shortName"]
                    for p in fast.data["projects"]["edges"]
                    for s in p["node"]["subprojects"]["edges"]
                    for i in s["node"]["workflowItems"]["edges"]
                ]
    # the comparison covered real trees: alice sees her 6 items, bob (no grants, no roles) none
    assert nested_items == {token: ["open"] * 6, other: []}
