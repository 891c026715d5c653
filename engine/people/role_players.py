"""Whether an actor plays a role in a workflow item's case, as a SQL condition.

Its own module because two others build on it from opposite sides: engine/people/visibility.py (a role
player sees the item without a grant) and engine/people/permissions.py (which visibility builds on, and
which words a refusal "not allowed" rather than "not found" for a role player).
"""

from typing import Any

from sqlalchemy import ColumnElement, exists
from sqlalchemy.orm import aliased

from engine.people.actors import Actor
from engine.people.deputies import held_or_lent
from models import Case, CaseRoleParty

# The aliases of ``plays_role``, made once: building two ``aliased()`` entities per call cost
# ~0.5 ms of CPU (item_visible 600 µs instead of 120 µs), paid by every page of items (bench R1).
# They appear only inside plays_role's EXISTS, which never encloses another plays_role, so one
# pair serves every query; the SQL and its compiled-cache entry are the same.
_ROLE_CASE, _ROLE_PLAYER = aliased(Case, name="role_case"), aliased(CaseRoleParty, name="role_player")


def plays_role(actor: Actor, item_id: Any) -> ColumnElement[bool]:
    """The actor plays a role in the case of the workflow item ``item_id`` (a column or value),
    themselves or as the deputy of an absent player (engine/people/deputies.py: the represented
    parties are a subquery the database reads once per statement, empty for nearly everyone).
    Deputyships are judged at ``actor.deputies_at`` (engine/people/actors.py; a bound parameter in a
    statement built once for many viewers, resolvers/compiled).
    Over aliases, so it correlates with ``item_id`` alone even inside a query that reads cases
    and role players itself (a pick list)."""
    case, player = _ROLE_CASE, _ROLE_PLAYER
    return exists().where(
        case.object_id == item_id,
        player.case_id == case.id,
        held_or_lent(actor, player.party_id),
    )
