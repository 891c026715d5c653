"""Search (issue 38, point 4): the projects, subprojects and workflow items the viewer may see
whose display name or description hold every word of a query, best match first.

Ranked by the database's full-text index, made by migration 0016 (on PostgreSQL re-made by
0019) and kept in step with the rows whatever writes them: on PostgreSQL a GIN index over each
table's ``TSVECTOR`` (PostgreSQL updates it with the row), ranked by ``ts_rank``; on SQLite one
FTS5 table fed by triggers, ranked by ``bm25``. Each word of three letters or more matches as a prefix ("inv" finds
"invoice"), a shorter one whole ("7" finds "7", not "70"), case aside, on the
``simple`` configuration (no stemming, no stop words: the same words match on both databases).

Bounded: of each kind, the newest ``MAX_RANKED`` matches and the viewer's own newest rows
(``_own``) are examined, those of them the viewer may see are ranked, and ``totalCount``
counts those. A word most rows hold costs a page no more than a rare one, for a viewer who may
see every row as for one who may see none; a viewer who may see fewer than ``MAX_RANKED`` rows
of a kind finds all their matches; the price is that for the others a very common query ranks
recent rows only, as mature trackers' searches do. Every page of a search ranks the same set (ids, not the order a
scan happens to yield), so cursors hold while nothing is written.

A page is one statement (the ranked ids of the visible matches past the cursor, each kind under
its own visibility rule, ``resolvers/visibility.py``, and their count when asked) and then the
rows by the loaders, one statement per kind on the page: the same for 2 results as for 100. The
cursor is the match's sort key and id, so the next page starts after it even if other rows
were written meanwhile.
"""

import math
import re
from typing import Any

from sqlalchemy import (
    Float,
    Select,
    and_,
    cast,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
    true,
    union_all,
)

from engine.people.actors import Actor
from engine.people.inheritance import reached_parents
from models import Case, CaseRoleParty, Permission, Project, Subproject, WorkflowItem, kind_of
from resolvers import visibility
from resolvers.context import Context
from resolvers.pagination import Page, check_first, invalid_argument

MAX_QUERY = 200  # characters of a query: as ProjectFilter.search
MAX_WORDS = 10  # words of a query: each is one more index lookup
# Matches examined per kind: the newest MAX_RANKED (by id: ids sort by creation) and the viewer's
# own newest MAX_RANKED per way in (_own), then those the viewer may see are ranked. A word
# that matches most items ("item") would otherwise have every match checked, ranked and sorted
# for one page; mature trackers bound a search the same way. At
# 1M items on PostgreSQL (bench/pages_search.py, EXPLAIN ANALYZE, load average 4-8) a page of a
# word 94,000 items hold took 22-35 ms with 500 and 100-107 ms with 2,000; of every item 8-10 ms.
MAX_RANKED = 500
# A word shorter than this matches whole ("7" finds "7", not "70"), a longer one as a prefix:
# the index reads every word a prefix covers, and "4" covers 4, 40-49 and 400-499 (408,000 of
# the bench's 1M items, 67 ms of GIN reading alone), where the whole word "4" is 5 ms.
MIN_PREFIX = 3
_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script: what both tokenizers index
_CURSOR = re.compile(r"(-?[0-9][0-9.e+-]{0,30})~([a-z]{1,8}_[0-9A-Z]{1,40})")

# The indexed expression of migration 0019, written exactly as there: PostgreSQL uses an index
# only for the very expression it was built on.
# SQLite's unicode61 splits words at every character that is not a letter or a digit.
# PostgreSQL's parser keeps some of them in or around a token, and then a word is not found on
# it alone: an email, a host, a path or a URL whole ("ada@example.org": '@/.:'), a sign
# ("2031-07" holds "-07", "+49": '-+'), a compound whole beside its parts ("a-b"), a path from
# '~' ("~y"), and it drops an XML tag or entity ("<b c>", "&amp;": '<>&'). Those characters are
# made spaces first, so both databases find the same words (tests/api/test_search.py checks
# every ASCII punctuation mark; '_', '#', "'" and the others split alike already).
TSVECTOR = (
    "to_tsvector('simple', translate({table}.display_name || ' ' || {table}.description, '@/.:-+~<>&', '          '))"
)
# Each kind, its visibility rule, and the intent whose grants show it (engine/people/visibility.py).
_KINDS: tuple[tuple[Any, Any, str], ...] = (
    (Project, visibility.project_visible, "project.view"),
    (Subproject, visibility.subproject_visible, "subproject.view"),
    (WorkflowItem, visibility.item_visible, "workflowItem.view"),
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


def _prefix(word: str) -> bool:
    return len(word) >= MIN_PREFIX


def parse_cursor(after: str | None) -> tuple[float, str] | None:
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


def _own(viewer: Actor, model: Any, intent: str) -> list[Select[Any]]:
    """The viewer's own newest rows of one kind by the ways its visibility rule lets them in,
    for each of their parties (the user, each group): ``MAX_RANKED`` granted ``intent``, and of
    items ``MAX_RANKED`` whose case they play a role in. Examined beside the newest matches, so
    a viewer who may see fewer rows than that finds every match of theirs, however common the
    words; each list is one index's range read newest first, bounded. Visibility itself stays
    the rule's: these only choose what to ask it of (a deputy's borrowed roles are asked, not
    listed here: by a very common word a deputy may miss those)."""
    if viewer.is_admin:  # an admin sees every match: the newest are theirs
        return []
    sources = []
    for party in sorted(viewer.party_ids):
        sources.append(
            select(Permission.resource_id.label("id"))
            .where(Permission.party_id == party, Permission.intent == intent)
            .order_by(Permission.resource_id.desc())
            .limit(MAX_RANKED)
        )
        if model is WorkflowItem:
            sources.append(
                select(Case.object_id.label("id"))
                .join(CaseRoleParty, CaseRoleParty.case_id == Case.id)
                .where(CaseRoleParty.party_id == party)
                .order_by(CaseRoleParty.case_id.desc())
                .limit(MAX_RANKED)
            )
    # the rows under the viewer's grants that reach down (engine/people/inheritance.py): the
    # newest of them, as for each grant above
    parent = {Subproject: Subproject.project_id, WorkflowItem: WorkflowItem.subproject_id}.get(model)
    reaching = None if parent is None else reached_parents(model.__name__, intent, viewer)
    if reaching is not None:
        sources.append(
            select(model.id.label("id")).where(parent.in_(reaching)).order_by(model.id.desc()).limit(MAX_RANKED)
        )
    return sources


def _ids(name: str, sources: list[Select[Any]]) -> Any:
    """One column of ids from several bounded selects (each a subquery: SQLite refuses LIMIT in
    a compound select's parts)."""
    parts = [source.subquery(f"{name}_{n}") for n, source in enumerate(sources)]
    return union_all(*(select(part.c.id) for part in parts))


def _postgres_matches(viewer: Actor, found: list[str]) -> list[Select[Any]]:
    """Per kind, the newest ``MAX_RANKED`` matches and the matches among the viewer's own rows
    (``_own``), those of them the viewer may see, ranked. PostgreSQL takes the newest matches
    from the GIN index when the words are rare, and walks the ids down when they are common (it
    stops after ``MAX_RANKED``): its statistics of the indexed words choose. The viewer's own
    rows are read by id and the words asked of each (OFFSET 0 keeps PostgreSQL from asking the
    GIN index a second time: for four common words that was 26 ms, against ~5 µs a row).
    Visibility is asked of those matches alone: asked while walking, a viewer who may see few
    rows had the walk go through all the others (9-16 s for a common word over 1M items)."""
    query = func.to_tsquery(literal_column("'simple'"), " & ".join(f"{w}:*" if _prefix(w) else w for w in found))
    selects = []
    for model, visible, intent in _KINDS:
        table_name = model.__tablename__
        vector = literal_column(TSVECTOR.format(table=table_name))
        matched = [
            select(model.id.label("id")).where(vector.op("@@")(query)).order_by(model.id.desc()).limit(MAX_RANKED)
        ]
        own = _own(viewer, model, intent)
        if own:
            listed = (
                select(model.id, model.display_name, model.description)
                .where(model.id.in_(_ids(f"own_{table_name}", own)))
                .offset(0)
                .subquery(f"listed_{table_name}")
            )
            listed_vector = literal_column(TSVECTOR.format(table=listed.name))
            matched.append(select(listed.c.id.label("id")).where(listed_vector.op("@@")(query)))
        name = f"found_{table_name}"
        candidates = (
            select(model.id, model.display_name, model.description)
            .where(model.id.in_(_ids(f"matched_{table_name}", matched)), visible(viewer))
            .subquery(name)
        )
        key = cast(-func.ts_rank(literal_column(TSVECTOR.format(table=name)), query), Float)  # ascending: best first
        selects.append(select(candidates.c.id.label("id"), key.label("key")))
    return selects


def _sqlite_matches(viewer: Actor, found: list[str]) -> list[Select[Any]]:
    """Per kind, the newest ``MAX_RANKED`` matches and the viewer's own rows (``_own``), those
    of them the viewer may see; then ``bm25`` ranks those alone, in a second full-text query
    restricted to them. It ranked every match first: the time of an answer then grew with the
    rows holding the words that the viewer may not see, a side channel on what others wrote
    (issue 47, finding 6)."""
    fts = literal_column("search_fts")
    words_matched = fts.op("MATCH")(" ".join(f'"{w}"*' if _prefix(w) else f'"{w}"' for w in found))
    hits = (
        select(_ENTRY.c.resource_id.label("id"))
        .select_from(_FTS.join(_ENTRY, _ENTRY.c.rowid == _FTS.c.rowid))
        .where(words_matched)
        .cte("hits")
        .prefix_with("MATERIALIZED")  # the index read once, for every kind
    )
    kinds = []
    for model, visible, intent in _KINDS:
        newest = (
            select(hits.c.id.label("id")).join(model, model.id == hits.c.id).order_by(model.id.desc()).limit(MAX_RANKED)
        )
        listed = _ids(f"listed_{model.__tablename__}", [newest, *_own(viewer, model, intent)])
        kinds.append(select(hits.c.id).join(model, model.id == hits.c.id).where(hits.c.id.in_(listed), visible(viewer)))
    shown = union_all(*kinds).cte("shown").prefix_with("MATERIALIZED")
    ranked = (
        select(_ENTRY.c.resource_id.label("id"), cast(func.bm25(fts), Float).label("key"))
        .select_from(_FTS.join(_ENTRY, _ENTRY.c.rowid == _FTS.c.rowid))
        .where(words_matched, _ENTRY.c.resource_id.in_(select(shown.c.id)))
    )
    return [ranked]


def page_statement(
    viewer: Actor,
    *,
    sqlite: bool,
    found: list[str],
    cursor: tuple[float, str] | None,
    limit: int,
    counted: bool = False,
) -> Select[Any]:
    """The ranked ids (and sort keys) of one page and the one after it, past ``cursor``, and
    with ``counted`` the number of matches as ``total`` on every row (one row of NULL ids when
    the page is empty): one statement, the matches found once for both (bench/pages_search.py
    explains it at 1M items)."""
    selects = (_sqlite_matches if sqlite else _postgres_matches)(viewer, found)
    matches = union_all(*selects).cte("matches").prefix_with("MATERIALIZED")
    page = select(matches.c.id, matches.c.key)
    if cursor is not None:
        key, last = cursor
        page = page.where(or_(matches.c.key > key, and_(matches.c.key == key, matches.c.id > last)))
    page = page.order_by(matches.c.key, matches.c.id).limit(limit + 1)
    if not counted:
        return page
    on_page = page.subquery("on_page")
    total = select(func.count().label("total")).select_from(matches).subquery("total")
    return (
        select(on_page.c.id, on_page.c.key, total.c.total)
        .select_from(total.outerjoin(on_page, true()))
        .order_by(on_page.c.key, on_page.c.id)
    )


def cursor_of(row: Any) -> str:
    return f"{row.key!r}~{row.id}"


async def search(ctx: Context, *, query: str, first: int | None, after: str | None, counted: bool = True) -> Page[Any]:
    limit = check_first(first)
    found = words(query)
    cursor = parse_cursor(after)
    sqlite = ctx.db.is_sqlite
    statement = page_statement(ctx.viewer, sqlite=sqlite, found=found, cursor=cursor, limit=limit, counted=counted)
    answer = (await ctx.session.execute(statement)).all()
    total = answer[0].total if counted else None  # counted: one row at least, its ids NULL on an empty page
    ranked = [row for row in answer if row.id is not None]
    rows = await _rows(ctx, [row.id for row in ranked[:limit]])
    shown = [row for row in ranked[:limit] if rows.get(row.id) is not None]  # gone since: left out
    return Page(
        nodes=[rows[row.id] for row in shown],
        cursors=[cursor_of(row) for row in shown],
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
