"""Batch loads of cases: the case, its states, enabled actions, its action instances' history,
roles and pick lists, its workflow, its jobs."""

from collections import defaultdict
from typing import Any, NamedTuple

from sqlalchemy import func, select

from engine.cases.assignment import pick_lists
from models import (
    Case,
    CaseRoleParty,
    CaseState,
    EnabledAction,
    Workflow,
)
from resolvers import job_loads
from resolvers.loader_cache import Loads, all_per_key, one_per_key, prime
from resolvers.pagination import Page, keyset_page, past_id

# Workflow rows by id, for the life of the process (see CaseLoads._workflows).
_DEFINITIONS: dict[str, Any] = {}


class PickListKey(NamedTuple):
    """One role of one case; the workflow id (of the case) names the role's allowed parties."""

    case_id: str
    workflow_id: str
    role: str


class HistoryKey(NamedTuple):
    """One page of a case's ``actionHistory``: the instances after ``after`` (an id), at most
    ``first``, of one status or all (None)."""

    case_id: str
    first: int
    after: str | None
    status: str | None


class CaseLoads(Loads):
    """The cases' loaders (named in ``Loaders``)."""

    async def _cases(self, ids: list[str]) -> list[Case | None]:
        return one_per_key(await self._rows(select(Case.__table__).where(self._in(Case.id, ids))), ids, lambda r: r.id)

    async def _cases_by_item(self, ids: list[str]) -> list[Case | None]:
        rows = await self._rows(select(Case.__table__).where(self._in(Case.object_id, ids)))
        prime(self.case_by_id, {case.id: case for case in rows})  # the other key: Case fields by id cost nothing
        return one_per_key(rows, ids, lambda r: r.object_id)

    async def _states_by_case(self, ids: list[str]) -> list[list[Any]]:
        """Every FSM scope of each case, top level ('') first: (case_id, scope, state,
        owner_status), the status of the instance owning a child scope (None at the top level)."""
        owner = EnabledAction.__table__.c
        rows = await self._rows(
            select(*CaseState.__table__.c, owner.status.label("owner_status"))
            .outerjoin(EnabledAction.__table__, owner.id == CaseState.scope)
            .where(self._in(CaseState.case_id, ids))
            .order_by(CaseState.scope)
        )
        return all_per_key(rows, ids, lambda r: r.case_id)

    async def _enabled_by_case(self, ids: list[str]) -> list[list[EnabledAction]]:
        rows = await self._rows(
            select(EnabledAction.__table__)
            .where(self._in(EnabledAction.case_id, ids), EnabledAction.status == "ENABLED")
            .order_by(EnabledAction.enabled_at, EnabledAction.id)
        )
        return all_per_key(rows, ids, lambda r: r.case_id)

    async def _enabled_by_id(self, ids: list[str]) -> list[EnabledAction | None]:
        return one_per_key(
            await self._rows(select(EnabledAction.__table__).where(self._in(EnabledAction.id, ids))),
            ids,
            lambda r: r.id,
        )

    async def _action_histories(self, keys: list[HistoryKey]) -> list[Page[Any]]:
        """Each case's page of instances, oldest first (ids are time-ordered): one statement for
        the keys that agree on size, cursor and status (a list of cases asks the same page of
        each), ranked per case by id and cut at ``first`` + 1, which says whether there is more."""
        batches: dict[tuple[int, str | None, str | None], list[HistoryKey]] = defaultdict(list)
        for key in keys:
            batches[key.first, key.after, key.status].append(key)
        found: dict[HistoryKey, Page[Any]] = {}
        table = EnabledAction.__table__
        for (first, after, status), batch in batches.items():
            where = [self._in(table.c.case_id, [key.case_id for key in batch])]
            if status is not None:
                where.append(table.c.status == status)
            if after is not None:
                where.append(past_id(table.c.id, after))
            if len(batch) == 1:  # one case: a range of its index under a LIMIT
                rows = await self._rows(select(table).where(*where).order_by(table.c.id).limit(first + 1))
            else:
                place = func.row_number().over(partition_by=table.c.case_id, order_by=table.c.id).label("place")
                ranked = select(table, place).where(*where).subquery("ranked")
                rows = await self._rows(
                    select(*(ranked.c[column.name] for column in table.c))
                    .where(ranked.c.place <= first + 1)
                    .order_by(ranked.c.case_id, ranked.c.place)
                )
            per_case = all_per_key(rows, [key.case_id for key in batch], lambda r: r.case_id)
            for key, instances in zip(batch, per_case, strict=True):
                found[key] = keyset_page(list(instances), limit=first, total=None, cursor=lambda row: row.id)
        return [found[key] for key in keys]

    async def _roles_by_case(self, ids: list[str]) -> list[dict[str, list[str]]]:
        rows = await self._rows(
            select(CaseRoleParty.case_id, CaseRoleParty.role, CaseRoleParty.party_id)
            .where(self._in(CaseRoleParty.case_id, ids))
            .order_by(CaseRoleParty.party_id)
        )
        result: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for case_id, role, party in rows:
            result[case_id][role].append(party)
        return [dict(result.get(i, {})) for i in ids]

    async def _pick_lists(self, keys: list[PickListKey]) -> list[list[str]]:
        """The party ids of each pick list (engine.cases.assignment.pick_lists): one statement for
        every role of every case the request shows, not one per role."""
        workflow_ids = list(dict.fromkeys(k.workflow_id for k in keys))
        workflows = dict(zip(workflow_ids, await self._workflows(workflow_ids), strict=True))
        return await pick_lists(
            self._ctx.session,
            actor=self._ctx.viewer,
            wanted=[(k.case_id, k.role) for k in keys],
            workflows={k.case_id: workflows[k.workflow_id] for k in keys},
        )

    async def _workflows(self, ids: list[str]) -> list[Workflow | None]:
        """Definitions never change (a new version is a new row) and every viewer may read
        them: each is read once per process, not once per request that shows a state."""
        missing = [i for i in ids if i not in _DEFINITIONS]
        if missing:
            for row in await self._rows(select(Workflow.__table__).where(self._in(Workflow.id, missing))):
                _DEFINITIONS[row.id] = row
        return [_DEFINITIONS.get(i) for i in ids]

    async def _jobs(self, ids: list[str]) -> list[Any]:
        return await job_loads.jobs_by_id(self._ctx.session, self._ctx.viewer, ids, self._in)

    async def _jobs_by_case(self, ids: list[str]) -> list[list[Any]]:
        return await job_loads.jobs_by_case(self._ctx.session, self._ctx.viewer, ids, self._in)
