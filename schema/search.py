"""Search and the pickers' lists: ``search``, ``users(search:)`` and ``groups(search:)``."""

from typing import Annotated

import strawberry

from resolvers import queries
from resolvers import search as searching
from resolvers.lookahead import selects
from schema.base import AppInfo, Connection, Node, connection
from schema.identity import Group, User

_Search = Annotated[
    str | None,
    strawberry.argument(
        description="Only those whose login or display name (a group: name or display name) contains this text, "
        f"case aside; at most {queries.MAX_PICKER_SEARCH} characters."
    ),
]


async def search(info: AppInfo, query: str, first: int | None = None, after: str | None = None) -> Connection[Node]:
    counted = selects(info, "totalCount")
    page = await searching.search(info.context, query=query, first=first, after=after, counted=counted)
    return connection(page)


search_field = strawberry.field(
    resolver=search,
    description=f"The projects, subprojects and workflow items you may see whose display name or description hold "
    f"every word of `query` (a word of {searching.MIN_PREFIX} letters or more matches as a prefix, a shorter one "
    f"whole, case aside; at most {searching.MAX_WORDS} words and {searching.MAX_QUERY} characters), best match "
    f"first. Bounded: of each kind the newest {searching.MAX_RANKED} rows holding the words, and your own newest "
    f"{searching.MAX_RANKED} by each grant or role, are examined; those you may see are ranked and counted.",
)


async def users(
    info: AppInfo, first: int | None = None, after: str | None = None, search: _Search = None
) -> Connection[User]:
    counted = selects(info, "totalCount")
    return connection(await queries.users(info.context, first=first, after=after, search=search, counted=counted))


async def groups(
    info: AppInfo, first: int | None = None, after: str | None = None, search: _Search = None
) -> Connection[Group]:
    counted = selects(info, "totalCount")
    return connection(await queries.groups(info.context, first=first, after=after, search=search, counted=counted))


users_field = strawberry.field(resolver=users, description="Users, oldest first; `search` for an assignee picker.")
groups_field = strawberry.field(resolver=groups, description="Groups, oldest first; `search` for an assignee picker.")
