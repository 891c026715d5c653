"""The abusive requests of bench A1 (bench/abuse.py): the documents and bodies of issue 19,
findings 1, 2 and 6, and the introspection documents of issue 40, finding 1, each as the
finding describes it."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import get_introspection_query

# D20's workflow: 3,000 states as in finding 2, or the largest of these the server accepts.
DIAGRAM_STATES = (3_000, 2_000, 1_000, 500, 200, 100, 50, 20)


@dataclass(frozen=True)
class Document:
    key: str  # its name in the report's table and for --only
    what: str
    bodies: tuple[Callable[[], bytes], ...]  # round n sends bodies[n % len]; built before the clock starts
    authenticated: bool = True
    pushed: bool = False  # written while its answer is read (bench.abuse._push), not by httpx
    chunked: bool = False  # pushed without a Content-Length
    may_answer: bool = False  # a quick answer is as good as a refusal (a diagram of a workflow the server accepted)
    hostile: int = 0  # then this many distinct hostile documents (hostile()), the server's RSS measured around them


def _query(document: str, variables: dict[str, Any] | None = None) -> Callable[[], bytes]:
    return lambda: json.dumps({"query": document, "variables": variables or {}}).encode()


def fragment_chain(length: int) -> str:
    """Finding 1: each fragment spreads the next twice, so following every spread visits 2**length
    fragments while the document stays about 1 KB."""
    fragments = [f"fragment F{i} on Query {{ viewer {{ login }} ...F{i + 1} ...F{i + 1} }}" for i in range(length - 1)]
    fragments.append(f"fragment F{length - 1} on Query {{ viewer {{ login }} }}")
    return "query { ...F0 }\n" + "\n".join(fragments)


def aliases(count: int, selection: str) -> str:
    return "{ " + " ".join(f"a{i}: {selection}" for i in range(count)) + " }"


# Finding 2: a page of 100 at every level, down to each item's case log.
CASE_LOGS = (
    "projects(first: 100) { edges { node { subprojects(first: 100) { edges { node { "
    "workflowItems(first: 100) { edges { node { case { log(first: 100) { edges { node { seq comment } } } } } } } "
    "} } } } } }"
)
TREE = (
    "projects(first: 100) { edges { node { id displayName subprojects(first: 100) { edges { node { id displayName "
    "workflowItems(first: 100) { edges { node { id displayName } } } } } } } } }"
)


# Issue 40, finding 1: a 1.3 KB document of 50 aliases of one `__schema` fragment answered 2 to 5 MB.
SCHEMA_FRAGMENT = (
    "fragment S on __Schema { types { kind name description fields(includeDeprecated: true) { name description "
    "args { name description type { kind name ofType { kind name ofType { kind name } } } defaultValue } "
    "type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } isDeprecated "
    "deprecationReason } inputFields { name type { kind name ofType { kind name } } } enumValues { name } "
    "possibleTypes { name } interfaces { name } } directives { name locations args { name } } }"
)
# Each level reads the fields of every type a field returns: the answer multiplies at every step.
NESTED_TYPES = (
    '__type(name: "Mutation") { fields { type { ofType { fields { type { ofType { fields { type { ofType { '
    "fields { name } } } } } } } } } } }"
)


def repeated_fields(copies: int = 495, name: str = "Q0") -> str:
    """Issue 47, finding 1: 495 copies of `viewer { login }` (7 KB, under the token limit); a new
    operation ``name`` makes each document new to every cache."""
    return f"query {name} {{ " + "viewer { login } " * copies + "}"


def hostile(n: int) -> str:
    """The ``n``-th of a series of distinct hostile documents: in turn 495 copies of one field
    (refused by the repeat limit) and 20 x 19 copies (within it, stopped by validation's work
    bound), each under a name of its own."""
    if n % 2 == 0:
        return repeated_fields(name=f"H{n}")
    return f"query H{n} {{ " + ("viewer { " + "login " * 19 + "} ") * 20 + "}"


def _body_of(size: int) -> Callable[[], bytes]:
    """A valid request padded to ``size`` bytes with a string variable."""
    head, tail = b'{"query":"{ __typename }","variables":{"pad":"', b'"}}'
    return lambda: head + b"x" * (size - len(head) - len(tail)) + tail


def _nested_variables(depth: int) -> Callable[[], bytes]:
    nested = '{"a":' * depth + "1" + "}" * depth
    return lambda: ('{"query":"{ __typename }","variables":{"v":' + nested + "}}").encode()


def workflow_spec(states: int) -> dict[str, Any]:
    """A chain of ``states`` states, one action from each to the next: drawing it checks every
    action in every state."""
    names = [f"s{i}" for i in range(states)]
    return {
        "short_name": f"a1_chain_{states}",
        "pretty_name": f"A1 chain of {states}",
        "roles": {"worker": {"pretty_name": "Worker", "callbacks": ["item_assignee"]}},
        "states": {
            name: {"pretty_name": f"State {i}", **({"terminal": True} if i == states - 1 else {})}
            for i, name in enumerate(names)
        },
        "actions": {
            "create": {"pretty_name": "Create", "pretty_past_tense": "Created", "trigger": "init", "new_state": "s0"},
            **{
                f"go{i}": {
                    "pretty_name": f"Go {i}",
                    "pretty_past_tense": f"Went {i}",
                    "assigned_role": "worker",
                    "assigned_states": [names[i]],
                    "allowed_roles": ["worker"],
                    "new_state": names[i + 1],
                }
                for i in range(states - 1)
            },
        },
    }


def documents(*, workflow_id: str, workflow_states: int) -> list[Document]:
    diagram = f'node(id: "{workflow_id}") {{ ... on Workflow {{ diagram }} }}'
    return [
        Document("F21", "chain of 21 fragments, each spreading the next twice", (_query(fragment_chain(21)),), False),
        Document("F30", "chain of 30 fragments, each spreading the next twice", (_query(fragment_chain(30)),), False),
        Document(
            "A300",
            "300 aliases of projects → subprojects → workflowItems → case.log, `first: 100` each",
            (_query(aliases(300, CASE_LOGS)),),
        ),
        Document("A1000", "1,000 aliases of a project → subproject → item tree", (_query(aliases(1000, TREE)),)),
        Document(
            "D20",
            f"20 aliases of `diagram` on a workflow of {workflow_states:,} states",
            (_query(aliases(20, diagram)),),
            may_answer=True,
        ),
        Document(
            "I50",
            "50 aliases of one `__schema` fragment (1.3 KB)",
            (_query(aliases(50, "__schema { ...S }") + " " + SCHEMA_FRAGMENT),),
            False,
        ),
        Document(
            "R495",
            "495 copies of `viewer { login }` (7 KB), a new operation name each round",
            tuple(_query(repeated_fields(name=f"Q{n}")) for n in range(5)),
            False,
            hostile=200,
        ),
        Document("IT10", "10 aliases of `__type` fields nested 4 levels", (_query(aliases(10, NESTED_TYPES)),), False),
        Document(
            "IQ",
            "the full introspection query (GraphiQL's and more), answered",
            (_query(get_introspection_query(descriptions=True, specified_by_url=True, directive_is_repeatable=True)),),
            False,
            may_answer=True,
        ),
        Document(
            "C990K",
            "a document of `{ __typename }` and a 990 KB comment",
            (_query("{ __typename }\n#" + "x" * 990_000),),
            False,
        ),
        Document("T100K", "a document of 100,000 tokens", (_query("{" + " a" * 99_998 + " }"),), False),
        Document("B50", "a 50 MB body", (_body_of(50 << 20),), False, pushed=True),
        Document(
            "B50C", "a 50 MB body, chunked (no Content-Length)", (_body_of(50 << 20),), False, pushed=True, chunked=True
        ),
        Document("V1000", "variables nested 1,000 deep", (_nested_variables(1000),), False),
        Document(
            "INT4301",
            "an integer of 4,301 digits in the variables",
            (lambda: b'{"query":"{ __typename }","variables":{"n":' + b"7" * 4301 + b"}}",),
            False,
        ),
        Document(
            "NOOBJ",
            'bodies that are not a JSON object: `null`, `"str"`, `123`, `true`',
            tuple((lambda b=b: b) for b in (b"null", b'"str"', b"123", b"true")),
            False,
        ),
    ]
