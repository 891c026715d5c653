"""Reading case fields, log titles and action instances (issue 48): each rule is the engine's
(engine/cases/case_fields.py); the compiled reads (resolvers/compiled/fields.py) write the same
rules in SQL, and the differential tests hold the two roads to one answer.
"""

from collections.abc import Callable
from typing import Any

from engine.cases.case_fields import hidden_names, visible, visible_log_data
from engine.people import deputies
from engine.spec.defaults import name_of
from engine.spec.workflows import spec_of
from models import EnabledAction
from resolvers.context import Context
from resolvers.loaders import HistoryKey, with_loaded
from resolvers.pagination import Page, check_first, check_id_cursor

__all__ = ["action_history", "entry_data", "fields", "sealed", "title"]


def _hidden(ctx: Context, workflow: Any, states: list[Any], played: dict[str, Any], then: Callable[..., Any]) -> Any:
    """``then(names)``, the names of the case's fields hidden from the viewer: its top-level state
    hides them but from admins and the players of the roles it names, a deputy playing the roles
    of the absent users they stand in for (engine/people/deputies.py, as everywhere a role is
    asked). Whom the viewer stands in for is read only when it could matter: a field is hidden
    from the viewer's own roles and some role of the case would see it."""
    viewer = ctx.viewer
    spec, state = spec_of(workflow), states[0].state if states else None
    own = hidden_names(spec, state, is_admin=viewer.is_admin, roles=deputies.roles_played(viewer, (), played))
    if not own or hidden_names(spec, state, is_admin=False, roles=set(played)):
        return then(own)
    return with_loaded(
        [(ctx.loaders.standing_in_by_user, viewer.user_id)],
        lambda absent: then(
            hidden_names(spec, state, is_admin=False, roles=deputies.roles_played(viewer, absent, played))
        ),
    )


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
        lambda workflow, states, played: _hidden(ctx, workflow, states, played, lambda names: visible(stored, names)),
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
            lambda workflow, states, played: _hidden(
                ctx, workflow, states, played, lambda names: visible_log_data(data, names)
            ),
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
            lambda workflow, states, played: _hidden(
                ctx, workflow, states, played, lambda names: value if visible_log_data(data, names) is data else None
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
    """Every instance of the case's actions (USER and the others), oldest first, by id: through
    a loader, so a list of cases reads every case's page in one statement."""
    key = HistoryKey(case_id=case.id, first=check_first(first), after=check_id_cursor(after), status=status)
    return await ctx.loaders.action_history_by_case.load(key)
