"""Caseway's schema runs strawberry's per-result extension hooks its own, leaner way
(schema/runner.py): the same hooks must run, in the same order, with the same results."""

from collections.abc import AsyncGenerator

import pytest
import strawberry
from strawberry.extensions import SchemaExtension

from schema.runner import Schema

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


@strawberry.type
class Query:
    ok: bool = True


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def count(self) -> AsyncGenerator[int, None]:
        for n in (1, 2):
            yield n


class Plain(SchemaExtension):
    """A plain per-result hook and its own results, as MaskErrors and most extensions have."""

    def on_stream_result(self, result: object) -> None:
        self.execution_context.context["seen"].append(("plain", result.data))  # type: ignore[attr-defined]

    def get_results(self) -> dict[str, object]:
        return {"plain": len(self.execution_context.context["seen"])}


class Awaiting(SchemaExtension):
    """A per-result hook that awaits something."""

    async def on_stream_result(self, result: object) -> None:
        self.execution_context.context["seen"].append(("awaited", result.data))  # type: ignore[attr-defined]


class Wrapping(SchemaExtension):
    """A hook around the result's delivery: strawberry's own context manager runs it."""

    def on_stream_result(self, result: object):  # type: ignore[no-untyped-def]
        self.execution_context.context["seen"].append(("before", result.data))  # type: ignore[attr-defined]
        yield
        self.execution_context.context["seen"].append(("after", result.data))  # type: ignore[attr-defined]


async def _deliveries(extensions: list[type[SchemaExtension]]) -> tuple[list[object], list[tuple[str, object]]]:
    schema = Schema(query=Query, subscription=Subscription, extensions=extensions)
    context: dict[str, list[tuple[str, object]]] = {"seen": []}
    stream = await schema.stream("subscription { count }", context_value=context)
    delivered = []
    async for result in stream:
        context["seen"].append(("delivered", result.data))
        delivered.append((result.data, result.extensions))
    return delivered, context["seen"]


def _for_each_result(*steps: str) -> list[tuple[str, object]]:
    """The steps in this order for the first result, then for the second."""
    return [(step, {"count": n}) for n in (1, 2) for step in steps]


async def test_plain_hooks_run_on_each_result_before_it_is_delivered() -> None:
    delivered, seen = await _deliveries([Plain])
    assert delivered == [({"count": 1}, {"plain": 0}), ({"count": 2}, {"plain": 2})]
    assert seen == _for_each_result("plain", "delivered")


async def test_a_hook_around_the_delivery_still_wraps_it() -> None:
    delivered, seen = await _deliveries([Plain, Wrapping])
    assert [data for data, _ in delivered] == [{"count": 1}, {"count": 2}]
    assert seen == _for_each_result("plain", "before", "delivered", "after")


async def test_an_async_hook_is_awaited_in_its_turn() -> None:
    delivered, seen = await _deliveries([Awaiting, Plain])
    assert [data for data, _ in delivered] == [{"count": 1}, {"count": 2}]
    assert seen == _for_each_result("awaited", "plain", "delivered")
