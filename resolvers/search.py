"""Search (issue 38, point 4): the projects, subprojects and workflow items the viewer may see
whose display name or description hold every word of a query, best match first.

Ranked by the database's full-text index, made by migration 0016 and kept in step with the rows
whatever writes them: on PostgreSQL a GIN index over each table's ``TSVECTOR`` (PostgreSQL
updates it with the row), ranked by ``ts_rank``; on SQLite one FTS5 table fed by triggers,
ranked by ``bm25``. Each word matches as a prefix ("inv" finds "invoice"), case aside, on the
``simple`` configuration (no stemming, no stop words: the same words match on both databases).

A page is one statement (the ranked ids of the visible matches past the cursor, each kind under
its own visibility rule, ``resolvers/visibility.py``) and then the rows by the loaders, one
statement per kind on the page: the same for 2 results as for 100. The cursor is the match's
sort key and id, so the next page starts after it even if other rows were written meanwhile.
"""

import math
import re
from typing import Any

from sqlalchemy import Float, Select, and_, cast, column, func, literal_column, or_, select, table, union_all

from models import Project, Subproject, WorkflowItem, kind_of
from resolvers import visibility
from resolvers.context import Context
from resolvers.pagination import Page, check_first, invalid_argument

MAX_QUERY = 200  # characters of a query: as ProjectFilter.search
MAX_WORDS = 10  # words of a query: each is one more index lookup
# Matches ranked per kind: a word that matches half the items ("item") would otherwise have every
# match ranked and sorted for one page. Beyond it, the first the index yields are ranked. At 1M
# items on PostgreSQL (in-process, a loaded machine) a page of a word 100,000 items hold took
# 350 ms at 10,000, 170 ms at 2,000, 110 ms at 500; a rare word's 20-35 ms: what remains is the
# GIN index's bitmap of every match, which no cap shortens.
MAX_RANKED = 2_000
_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script: what both tokenizers index
_CURSOR = re.compile(r"(-?[0-9][0-9.e+-]{0,30})~([a-z]{1,8}_[0-9A-Z]{1,40})")

# The indexed expression of migration 0016, written exactly as there: PostgreSQL uses an index
# only for the very expression it was built on.
# PostgreSQL's parser keeps an email, a host, a path or a URL whole ("ada@example.org") where
# SQLite's unicode61 splits them into words: the separators are made spaces first, so both
# databases match the same words ("example" finds the address on both).
TSVECTOR = "to_tsvector('simple', translate({table}.display_name || ' ' || {table}.description, '@/.:', '    '))"
_KINDS: tuple[tuple[Any, Any], ...] = (
    (Project, visibility.project_visible),
    (Subproject, visibility.subproject_visible),
    (WorkflowItem, visibility.item_visible),
)
# SQLite's full-text tables (migration 0016): not models, so described here for the query.
_FTS = table("search_fts", column("rowid"))
_ENTRY = table("search_entry", column("rowid"), column("resource_id"))


def words(query: str) -> list[str]:
    """The query's words, lower-cased, or an INVALID_INPUT error naming ``query``."""
    if len(query) > MAX_QUERY:
        raise invalid_argument(f"query is longer than {MAX_QUERY} characters.", "query")
    found = list(dict.fromkeys(_WORD.findall(query.lower())))
    if not found:
        raise invalid_argument("query has no word to search for (letters or digits).", "query")
    if len(found) > MAX_WORDS:
        raise invalid_argument(f"query has more than {MAX_WORDS} words.", "query")
    return found


def _cursor(after: str | None) -> tuple[float, str] | None:
    """An edge's cursor: its sort key and id."""
    if after is None:
        return None
    match = _CURSOR.fullmatch(after)
    key = None
    if match is not None:
        try:
            key = float(match.group(1))
        except ValueError:
            key = None
    if match is None or key is None or not math.isfinite(key):
        raise invalid_argument("after is not a cursor of this search: give an edge's cursor.", "after")
    return key, match.group(2)


def _postgres_matches(ctx: Context, found: list[str]) -> list[Select[Any]]:
    """Per kind, the first ``MAX_RANKED`` visible matches the GIN index yields, then ranked."""
    query = func.to_tsquery(literal_column("'simple'"), " & ".join(f"{w}:*" for w in found))
    selects = []
    for model, visible in _KINDS:
        vector = literal_column(TSVECTOR.format(table=model.__tablename__))
        name = f"found_{model.__tablename__}"
        candidates = (
            select(model.id, model.display_name, model.description)
            .where(vector.op("@@")(query), visible(ctx.viewer))
            .limit(MAX_RANKED)
            .subquery(name)
        )
        key = cast(-func.ts_rank(literal_column(TSVECTOR.format(table=name)), query), Float)  # ascending: best first
        selects.append(select(candidates.c.id.label("id"), key.label("key")))
    return selects


def _sqlite_matches(ctx: Context, found: list[str]) -> list[Select[Any]]:
    fts = literal_column("search_fts")
    hits = (
        select(_ENTRY.c.resource_id.label("id"), cast(func.bm25(fts), Float).label("key"))
        .select_from(_FTS.join(_ENTRY, _ENTRY.c.rowid == _FTS.c.rowid))
        .where(fts.op("MATCH")(" ".join(f'"{w}"*' for w in found)))
        .cte("hits")
        .prefix_with("MATERIALIZED")  # bm25 is asked of the FTS query alone, once per match
    )
    kinds = []
    for model, visible in _KINDS:
        found_kind = (
            select(hits.c.id, hits.c.key)
            .join(model, model.id == hits.c.id)
            .where(visible(ctx.viewer))
            .limit(MAX_RANKED)
            .subquery(f"found_{model.__tablename__}")
        )
        kinds.append(select(found_kind.c.id, found_kind.c.key))
    return kinds


async def search(ctx: Context, *, query: str, first: int | None, after: str | None, counted: bool = True) -> Page[Any]:
    limit = check_first(first)
    found = words(query)
    cursor = _cursor(after)
    selects = (_sqlite_matches if ctx.db.is_sqlite else _postgres_matches)(ctx, found)
    matches = union_all(*selects).subquery("matches")
    page = select(matches.c.id, matches.c.key).order_by(matches.c.key, matches.c.id).limit(limit + 1)
    if cursor is not None:
        key, last = cursor
        page = page.where(or_(matches.c.key > key, and_(matches.c.key == key, matches.c.id > last)))
    ranked = (await ctx.session.execute(page)).all()
    total = None
    if counted:
        total = await ctx.session.scalar(select(func.count()).select_from(matches)) or 0
    rows = await _rows(ctx, [row.id for row in ranked[:limit]])
    shown = [row for row in ranked[:limit] if rows.get(row.id) is not None]  # gone since: left out
    return Page(
        nodes=[rows[row.id] for row in shown],
        cursors=[f"{row.key!r}~{row.id}" for row in shown],
        has_next_page=len(ranked) > limit,
        total_count=total,
    )


async def _rows(ctx: Context, ids: list[str]) -> dict[str, Any]:
    """The page's rows through the loaders (one statement per kind), which check visibility
    again and let the nodes' fields find them loaded."""
    loaders = {
        "Project": ctx.loaders.project_by_id,
        "Subproject": ctx.loaders.subproject_by_id,
        "WorkflowItem": ctx.loaders.item_by_id,
    }
    by_kind: dict[str, list[str]] = {}
    for id_ in ids:
        by_kind.setdefault(kind_of(id_) or "", []).append(id_)
    rows: dict[str, Any] = {}
    for kind, kind_ids in by_kind.items():
        rows.update(zip(kind_ids, await loaders[kind].load_many(kind_ids), strict=True))
    return rows
