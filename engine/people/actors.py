"""Who is acting: a user with the parties they stand for."""

from dataclasses import dataclass, field
from datetime import datetime

SYSTEM_ID = "system"


@dataclass(frozen=True, slots=True)
class Actor:
    """The user behind a request. ``party_ids`` is the user id plus every group they are in,
    so a grant or role held by a group is checked with one set intersection."""

    user_id: str
    login: str
    is_admin: bool = False
    party_ids: frozenset[str] = field(default_factory=frozenset)
    expires_at: datetime | None = None  # of the token that authenticated this actor, if any
    # The instant deputyships are judged at in SQL built for this actor (engine/people/role_players.py:
    # an absent user's deputy plays their roles); None: the moment the SQL is built. A compiled
    # read's viewer (resolvers/compiled/build.py) gives a bound parameter instead, set at each
    # execution, so that a statement kept for many requests never freezes the time.
    deputies_at: datetime | None = None
    # The API token the request came with (engine/people/api_tokens.py), if it came with one: its
    # id, its name (what the log's entries say they came ``via``) and its highest scope (None: a
    # session token, which may do all the user may).
    token_id: str | None = None
    via: str | None = None
    scope: str | None = None

    def is_any(self, parties: "set[str] | frozenset[str] | list[str]") -> bool:
        return not self.party_ids.isdisjoint(parties)


SYSTEM = Actor(user_id=SYSTEM_ID, login="system", is_admin=True, party_ids=frozenset({SYSTEM_ID}))
