"""Deputies: while a user is away, another one acts for them (the OpenACS workflow package's
"out of office").

A deputyship names an absent user, their deputy and a period ``[from, until)``. While it is
active the deputy:

- sees the absent user's tasks in ``myTasks`` (each marked ``onBehalfOf``) and may perform
  them; the log entry names the deputy as its actor and the absent user as ``on_behalf_of``;
- counts as a player of the roles the absent user plays (themselves or through a group) when
  visibility asks "does the viewer play a role in this item's case?" (``engine/people/visibility.py``),
  so the deputy reads the items, cases and logs the tasks are about. Nothing else is lent: the
  absent user's grants (``workflowItem.view``, privileges) and admin rights stay theirs;
- gets a copy of each notification the absent user gets (``notify_deputies``).

The absent user keeps all of it too. One level only: what a deputy may do for the absent user
comes from the absent user's own parties, never from whom the absent user stands in for.

A disabled absent user or a disabled deputy lends nothing, whatever the period says.

Nothing runs when a period starts or ends (nor when a user is disabled): each question is asked
with the time it is asked at (the process's one clock, engine/clock.py, which tests move), so a
deputyship starts and ends exactly at its instants.
"""

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, delete, func, or_, select, true, union_all
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine import validation
from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode, not_found
from engine.people.actors import SYSTEM_ID, Actor
from models import Deputyship, GroupMember, Notification, User, as_utc, kind_of, new_id

MAX_PERIOD = timedelta(days=366)  # a deputyship longer than a year is a role, not an absence
MAX_OPEN = 20  # deputyships of one absent user not yet ended: ``User.deputies`` lists them all
MAX_STANDING_IN = 50  # deputyships one deputy holds not yet ended: ``User.deputyFor`` lists them all
MAX_COMMENT = validation.MAX_TEXT


def now() -> datetime:
    """The time every deputy question is asked at: the process's one clock (engine/clock.py)."""
    return SYSTEM_CLOCK.now()


# Its own alias, correlated to the deputyship alone: a query embedding ``represented`` that
# reads users itself (a user list) must not swallow this one's FROM.
_PERSON = aliased(User, name="deputyship_person")


def _active(at: Any) -> ColumnElement[bool]:
    """Lending at ``at``: within the period, and neither user disabled (a disabled absent user
    has nothing left to lend, a disabled deputy may not act for anyone), asked at each read like
    the period, so enabling the user again lends again. Two primary-key probes per deputyship."""
    disabled = (
        select(_PERSON.id)
        .where(_PERSON.id.in_([Deputyship.user_id, Deputyship.deputy_id]), _PERSON.disabled.is_(True))
        .correlate(Deputyship)
    )
    return and_(Deputyship.starts_at <= at, Deputyship.ends_at > at, ~disabled.exists())


def represented(deputy_id: Any, at: Any = None) -> Select[tuple[str, str]]:
    """``(absent_id, party_id)``: every party of every user ``deputy_id`` stands in for at
    ``at`` (default: now): the user and each group they are in. A statement to embed (one range
    of the deputy's index, empty for nearly everyone), never a round trip of its own. Either may
    be a bound parameter (a compiled read's, made once for every viewer)."""
    at = now() if at is None else at
    absent = select(Deputyship.user_id).where(Deputyship.deputy_id == deputy_id, _active(at)).subquery("absent")
    return union_all(
        select(absent.c.user_id.label("absent_id"), absent.c.user_id.label("party_id")),
        select(absent.c.user_id, GroupMember.group_id).join(GroupMember, GroupMember.user_id == absent.c.user_id),
    )  # type: ignore[return-value]


def represented_parties(deputy_id: Any, at: Any = None) -> Select[tuple[str]]:
    """The party ids of ``represented``, for ``party_id IN (...)``."""
    parties = represented(deputy_id, at).subquery("represented")
    return select(parties.c.party_id).correlate(None)  # never tied to an enclosing query's tables


def held_or_lent(actor: Any, party: Any, lent: Any = None) -> ColumnElement[bool]:
    """``party`` (a column of party ids) is one of the actor's own parties, or one lent to them:
    a party of an absent user they stand in for at ``actor.deputies_at`` (``represented``). The
    SQL form of "does the actor play this role?" wherever a role is asked (role_players.plays_role,
    who sees a state's hidden case fields); ``actor`` may be a compiled read's viewer of bound
    parameters (resolvers/compiled/build.py). ``lent``: ``represented`` as the statement already
    holds it (a CTE: SQLite's parser holds only a few nested subqueries), else it is embedded."""
    lent_parties = represented_parties(actor.user_id, actor.deputies_at) if lent is None else select(lent.c.party_id)
    return or_(party.in_(actor.party_ids), party.in_(lent_parties))


async def standing_in(session: Any, *, user_id: str) -> list[Actor]:
    """The absent users ``user_id`` stands in for now, each as an actor holding the absent user's
    parties and nothing else (never admin: an admin's absence lends no admin rights)."""
    if user_id == SYSTEM_ID:
        return []
    rows = await session.execute(represented(user_id))
    parties: dict[str, set[str]] = defaultdict(set)
    for absent_id, party_id in rows:
        parties[absent_id].add(party_id)
    return [
        Actor(user_id=absent, login=absent, party_ids=frozenset(found)) for absent, found in sorted(parties.items())
    ]


def plays_for(absent: Iterable[Actor], roles: Mapping[str, Collection[str]]) -> list[Actor]:
    """Those of ``absent`` who play a role in a case whose players are ``roles``."""
    return [a for a in absent if any(not a.party_ids.isdisjoint(parties) for parties in roles.values())]


def roles_played(actor: Actor, absent: Iterable[Actor], roles: Mapping[str, Collection[str]]) -> set[str]:
    """The roles ``actor`` plays in a case whose players are ``roles`` (role -> party ids):
    through their own parties, or lent by ``absent`` (``standing_in``: the absent users they
    stand in for, each with their groups). ``held_or_lent`` is the same rule in SQL."""
    lenders = [actor, *absent]
    return {role for role, parties in roles.items() if any(not a.party_ids.isdisjoint(parties) for a in lenders)}


async def deputies_of(session: AsyncSession, user_ids: Collection[str]) -> dict[str, list[str]]:
    """The deputies standing in for each of ``user_ids`` now (absent user -> deputies)."""
    if not user_ids:
        return {}
    at = now()
    rows = await session.execute(
        select(Deputyship.user_id, Deputyship.deputy_id)
        .where(Deputyship.user_id.in_(sorted(user_ids)), _active(at))
        .order_by(Deputyship.user_id, Deputyship.deputy_id)
    )
    result: dict[str, list[str]] = defaultdict(list)
    for user_id, deputy_id in rows:
        result[user_id].append(deputy_id)
    return dict(result)


async def deputies_of_parties(session: AsyncSession, parties: Collection[str]) -> dict[str, set[str]]:
    """The deputies standing in now for each of ``parties``: for a user, theirs; for a group,
    those of its members (what ``represented`` lends, asked the other way round, for the live
    streams' audiences)."""
    if not parties:
        return {}
    at = now()
    wanted = sorted(parties)
    direct = select(Deputyship.user_id, Deputyship.deputy_id).where(Deputyship.user_id.in_(wanted), _active(at))
    by_group = (
        select(GroupMember.group_id, Deputyship.deputy_id)
        .join(Deputyship, Deputyship.user_id == GroupMember.user_id)
        .where(GroupMember.group_id.in_(wanted), _active(at))
    )
    result: dict[str, set[str]] = defaultdict(set)
    for party, deputy_id in await session.execute(union_all(direct, by_group)):
        result[party].add(deputy_id)
    return dict(result)


async def notify_deputies(session: AsyncSession, entry: Any, heard: Mapping[str, str], notified: set[str]) -> set[str]:
    """A copy of each notification of ``entry`` (``heard``: recipient -> level, best level
    first) for the recipient's deputies standing in now, at the recipient's level; at most one
    per user and entry, never to its actor (``notified`` already holds them). Returns who got
    one. Read as any notification: only while the deputy may read the entry."""
    standing = await deputies_of(session, heard)
    written: set[str] = set()
    for user_id, level in heard.items():
        for deputy_id in standing.get(user_id, ()):
            if deputy_id not in notified and deputy_id not in written:
                session.add(
                    Notification(
                        id=new_id("ntf"), recipient_id=deputy_id, activity_id=entry.id, level=level, created_at=entry.at
                    )
                )
                written.add(deputy_id)
    return written


def visible_to(actor: Actor) -> ColumnElement[bool]:
    """Deputyships ``actor`` may see: their own (as the absent user or the deputy); admins all.
    Anyone else is told such a deputyship does not exist."""
    if actor.is_admin:
        return true()
    return or_(Deputyship.user_id == actor.user_id, Deputyship.deputy_id == actor.user_id)


def open_at(at: datetime | None = None) -> ColumnElement[bool]:
    """Deputyships that have not ended: the current and the coming ones."""
    return Deputyship.ends_at > (at or now())


def _instant(value: datetime, field: str) -> datetime:
    """An aware UTC instant (naive means UTC, as everywhere)."""
    try:
        return as_utc(value)
    except OverflowError:
        raise validation.invalid(f"{field} is outside the years 1 to 9999 in UTC.", field) from None


async def _user(session: AsyncSession, user_id: str, field: str) -> User:
    user = await session.get(User, user_id) if kind_of(user_id) == "User" else None
    if user is None:
        raise not_found("user", user_id, field)
    return user


async def set_deputy(
    session: AsyncSession,
    *,
    actor: Actor,
    deputy_id: str,
    until: datetime,
    starts: datetime | None = None,
    comment: str | None = None,
    user_id: str | None = None,
) -> Deputyship:
    """Name ``deputy_id`` the deputy of ``user_id`` (default: the actor) from ``starts``
    (default: now) until ``until``. Only an admin names someone else's deputy."""
    at = now()
    absent_id = user_id or actor.user_id
    if absent_id != actor.user_id and not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may name another user's deputy.", ["userId"])
    starts, until = _instant(starts or at, "from"), _instant(until, "until")
    text = validation.optional_text(comment, "comment", max_len=MAX_COMMENT)
    if until <= starts:
        raise validation.invalid("until must be later than from.", "until")
    if until <= at:
        raise validation.invalid("until is in the past: the deputyship would never be active.", "until")
    if until - starts > MAX_PERIOD:
        raise validation.invalid(f"A deputyship lasts at most {MAX_PERIOD.days} days.", "until")
    if deputy_id == absent_id:
        raise DomainError(ErrorCode.SELF_DEPUTY, "Nobody can be their own deputy.", ["deputyId"])
    absent = await _user(session, absent_id, "userId")
    deputy = await _user(session, deputy_id, "deputyId")
    if deputy.disabled:
        raise validation.invalid("A disabled user cannot be a deputy.", "deputyId")
    # Both users' rows locked, in id order: two concurrent namings of the same absent user or the
    # same deputy count each other, and never wait for each other in a circle (SQLite: one writer).
    await session.execute(
        select(User.id).where(User.id.in_([absent.id, deputy.id])).order_by(User.id).with_for_update()
    )
    current = (
        await session.execute(
            select(Deputyship.deputy_id, Deputyship.starts_at, Deputyship.ends_at).where(
                Deputyship.user_id == absent.id, open_at(at)
            )
        )
    ).all()
    if any(d == deputy.id and s < until and starts < e for d, s, e in current):
        raise DomainError(
            ErrorCode.ALREADY_EXISTS,
            "That user is already this user's deputy for part of that period.",
            ["deputyId"],
        )
    if len(current) >= MAX_OPEN:
        raise DomainError(
            ErrorCode.TOO_MANY_DEPUTIES,
            f"A user has at most {MAX_OPEN} current and coming deputyships; remove one first.",
        )
    standing_in = await session.scalar(
        select(func.count()).select_from(Deputyship).where(Deputyship.deputy_id == deputy.id, open_at(at))
    )
    if (standing_in or 0) >= MAX_STANDING_IN:
        raise DomainError(
            ErrorCode.TOO_MANY_DEPUTIES,
            f"A user stands in for others in at most {MAX_STANDING_IN} current and coming deputyships.",
            ["deputyId"],
        )
    deputyship = Deputyship(
        id=new_id("dep"),
        user_id=absent.id,
        deputy_id=deputy.id,
        starts_at=starts,
        ends_at=until,
        comment=text,
        created_by=actor.user_id,
        created_at=at,
    )
    session.add(deputyship)
    await session.flush()
    return deputyship


async def remove_deputy(session: AsyncSession, *, actor: Actor, id: str) -> str:
    """End a deputyship now and for good (deleting it): its absent user, its deputy (who may
    decline) or an admin. Anyone else is told it does not exist."""
    found = await session.scalar(
        delete(Deputyship).where(Deputyship.id == id, visible_to(actor)).returning(Deputyship.id)
    )
    if found is None:
        raise not_found("deputyship", id)
    return found


__all__ = [
    "MAX_OPEN",
    "MAX_PERIOD",
    "MAX_STANDING_IN",
    "deputies_of",
    "deputies_of_parties",
    "held_or_lent",
    "notify_deputies",
    "now",
    "open_at",
    "plays_for",
    "remove_deputy",
    "represented",
    "represented_parties",
    "roles_played",
    "set_deputy",
    "standing_in",
    "visible_to",
]
