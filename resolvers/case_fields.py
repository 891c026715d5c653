"""Reading case fields, log titles and action instances (issue 48): each rule is the engine's
(engine/cases/case_fields.py); the compiled reads (resolvers/compiled/fields.py) write the same
rules in SQL, and the differential tests hold the two roads to one answer.
"""

from typing import Any

from sqlalchemy import select

from engine.cases.case_fields import hidden_names, visible, visible_log_data
from engine.spec.defaults import name_of
from engine.spec.workflows import spec_of
from models import EnabledAction
from resolvers.context import Context
from resolvers.loaders import with_loaded
from resolvers.pagination import Page, check_first, check_id_cursor, keyset_page, past_id

__all__ = ["action_history", "entry_data", "fields", "sealed", "title"]


def _hidden(ctx: Context, workflow: Any, states: list[Any], played: dict[str, Any]) -> frozenset[str]:
    viewer = ctx.viewer
    roles = {role for role, parties in played.items() if viewer.is_any(set(parties))}
    return hidden_names(spec_of(workflow), states[0].state if states else None, is_admin=viewer.is_admin, roles=roles)


def fields(ctx: Context, case: Any) -> Any:
    """The case's fields the viewer may see: those its state hides are left out, but for admins
    and the roles the state names."""
    stored = case.fields or {}
    if not stored:
        return {}
    loaders = ctx.loaders
    return with_loaded(
        [
            (loaders.workflow_by_id, case.workflow_id),
            (loaders.states_by_case, case.id),
            (loaders.roles_by_case, case.id),
        ],
        lambda workflow, states, played: visible(stored, _hidden(ctx, workflow, states, played)),
    )


def entry_data(ctx: Context, entry: Any) -> Any:
    """An entry's data, the changes of fields hidden from the viewer left out (as Case.fields)."""
    data = entry.data
    if not isinstance(data, dict) or "fields" not in data or not entry.case_id:
        return data
    loaders = ctx.loaders

    def with_case(case: Any) -> Any:
        if case is None:
            return data
        return with_loaded(
            [
                (loaders.workflow_by_id, case.workflow_id),
                (loaders.states_by_case, case.id),
                (loaders.roles_by_case, case.id),
            ],
            lambda workflow, states, played: visible_log_data(data, _hidden(ctx, workflow, states, played)),
        )

    return with_loaded([(loaders.case_by_id, entry.case_id)], with_case)


def sealed(ctx: Context, entry: Any, value: str | None) -> Any:
    """An entry's ``hash`` or ``prevHash``, or null when the entry records changes of case fields
    hidden from the viewer: the hash is over every value, so with the rest of the entry in hand a
    reader could test guesses of a hidden value against it (found by review). Verification
    (verifyHistory, admins) reads the stored hashes."""
    data = entry.data
    if not isinstance(data, dict) or not isinstance(data.get("fields"), dict) or not entry.case_id:
        return value
    loaders = ctx.loaders

    def with_case(case: Any) -> Any:
        if case is None:
            return value
        return with_loaded(
            [
                (loaders.workflow_by_id, case.workflow_id),
                (loaders.states_by_case, case.id),
                (loaders.roles_by_case, case.id),
            ],
            lambda workflow, states, played: (
                value if visible_log_data(data, _hidden(ctx, workflow, states, played)) is data else None
            ),
        )

    return with_loaded([(loaders.case_by_id, entry.case_id)], with_case)


def title(ctx: Context, entry: Any) -> Any:
    """The entry's title: the one its action's log_title made, else for an executed action
    "<past tense> by <actor>" (the past tense alone for the system), else null."""
    stored = getattr(entry, "title", None)
    if stored or entry.kind != "action_executed" or not entry.action or not entry.case_id:
        return stored
    loaders = ctx.loaders
    system = not entry.actor_id or entry.actor_id == "system"

    def with_case(case: Any) -> Any:
        if case is None:
            return None
        needs = [(loaders.workflow_by_id, case.workflow_id)]
        if not system:
            needs.append((loaders.party_by_id, entry.actor_id))
        return with_loaded(needs, lambda workflow, *actor: _default_title(workflow, entry.action, actor))

    return with_loaded([(loaders.case_by_id, entry.case_id)], with_case)


def _default_title(workflow: Any, action: str, actor: tuple[Any, ...]) -> str:
    past = name_of(spec_of(workflow).actions.get(action), "pretty_past_tense", action)
    name = getattr(actor[0], "display_name", None) if actor and actor[0] is not None else None
    return f"{past} by {name}" if name else past


async def action_history(
    ctx: Context, case: Any, *, first: int | None, after: str | None, status: str | None
) -> Page[EnabledAction]:
    """Every instance of the case's actions (USER and the others), oldest first, by id."""
    limit = check_first(first)
    cursor = check_id_cursor(after)
    query = select(EnabledAction).where(EnabledAction.case_id == case.id)
    if status is not None:
        query = query.where(EnabledAction.status == status)
    if cursor is not None:
        query = query.where(past_id(EnabledAction.id, cursor))
    rows = list(await ctx.session.scalars(query.order_by(EnabledAction.id).limit(limit + 1)))
    return keyset_page(rows, limit=limit, total=None, cursor=lambda row: row.id)
