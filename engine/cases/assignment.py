"""Who plays which role in a case: lazy default assignment, reassignment and pick lists."""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, select, true, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.cases import task_index
from engine.cases.context import CaseContext, case_not_found, load_case
from engine.errors import DomainError, ErrorCode
from engine.history import activity
from engine.notify import notifications
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.visibility import item_visible
from engine.registry import assignee_callbacks, register_assignee
from engine.spec.specs import RoleSpec
from engine.spec.workflows import spec_of
from engine.tree.resources import check_party
from models import Case as CaseRow
from models import CaseRoleParty, GroupMember, Workflow

REASSIGN_MODES = ("REPLACE", "ADD", "REMOVE")
PICK_LIST_LENGTH = 20  # parties a pick list names at most
PICK_LIST_CASES = 500  # the newest cases of the workflow a pick list ranks its players from


@register_assignee("creation_user")
async def creation_user(ctx: CaseContext, role: RoleSpec) -> list[str]:
    return [ctx.item.created_by]


@register_assignee("item_assignee")
async def item_assignee(ctx: CaseContext, role: RoleSpec) -> list[str]:
    return [ctx.item.assignee_id] if ctx.item.assignee_id else []


@register_assignee("subproject_assignee")
async def subproject_assignee(ctx: CaseContext, role: RoleSpec) -> list[str]:
    return [ctx.subproject.assignee_id] if ctx.subproject.assignee_id else []


@register_assignee("subproject_validator")
async def subproject_validator(ctx: CaseContext, role: RoleSpec) -> list[str]:
    return [ctx.subproject.validator_id] if ctx.subproject.validator_id else []


@register_assignee("static")
async def static(ctx: CaseContext, role: RoleSpec) -> list[str]:
    return list(role.static_parties)


async def set_role_parties(ctx: CaseContext, role: str, parties: list[str]) -> None:
    current = ctx.roles.get(role, set())
    wanted = list(dict.fromkeys(parties))
    removed = current - set(wanted)
    if removed:
        task_index.touch(ctx.session, [ctx.case.id])  # a bulk DELETE, which no flush shows
        await ctx.session.execute(
            delete(CaseRoleParty).where(
                CaseRoleParty.case_id == ctx.case.id, CaseRoleParty.role == role, CaseRoleParty.party_id.in_(removed)
            )
        )
    for party in wanted:
        if party not in current:
            ctx.session.add(CaseRoleParty(case_id=ctx.case.id, role=role, party_id=party))
    ctx.roles[role] = set(wanted)  # the rows go with the next flush: several roles, one INSERT


async def assign_defaults(ctx: CaseContext, role_name: str) -> None:
    """Give an empty role its default assignees: the first callback with a non-empty answer wins.
    Lazy on purpose: it runs when an action of the role first becomes enabled, so the answer
    can depend on what happened earlier in the case."""
    if ctx.roles.get(role_name):
        return
    role = ctx.spec.roles[role_name]
    callbacks = assignee_callbacks()
    for name in role.callbacks or (("static",) if role.static_parties else ()):
        parties = await _only_allowed(ctx, role, [p for p in await callbacks[name](ctx, role) if p])
        if parties:
            await set_role_parties(ctx, role_name, parties)
            await activity.record(
                ctx.session,
                kind="role_assigned",
                actor_id=None,
                about=ctx.item,
                case_id=ctx.case.id,
                data={"role": role_name, "partyIds": parties, "by": name},
            )
            return


async def _only_allowed(ctx: CaseContext, role: RoleSpec, party_ids: list[str]) -> list[str]:
    """The parties a callback named that the role accepts (``allowed_parties``, or users in those
    groups): a default must obey the rule a reassignment obeys. A callback whose every party is
    refused counts as empty, so the next callback is asked."""
    if not role.allowed_parties or all(p in role.allowed_parties for p in party_ids):
        return party_ids
    members = await _members_of(ctx, role.allowed_parties)
    return [p for p in party_ids if p in role.allowed_parties or p in members]


async def _members_of(ctx: CaseContext, group_ids: tuple[str, ...]) -> set[str]:
    members = await ctx.session.scalars(select(GroupMember.user_id).where(GroupMember.group_id.in_(group_ids)))
    return set(members.all())


async def _allowed(ctx: CaseContext, role: RoleSpec, party_ids: list[str]) -> None:
    """A role that lists allowed_parties accepts those parties and users in those groups."""
    if not role.allowed_parties:
        return
    allowed = set(role.allowed_parties)
    members = await _members_of(ctx, role.allowed_parties)
    for i, party in enumerate(party_ids):
        if party not in allowed and party not in members:
            raise DomainError(
                ErrorCode.PARTY_NOT_ALLOWED,
                f"{party!r} may not be given the role {role.short_name!r}.",
                ["partyIds", str(i)],
            )


async def check_assignment(ctx: CaseContext, role_name: str, party_ids: list[str], field: str) -> RoleSpec:
    role = ctx.spec.roles.get(role_name)
    if role is None:
        raise DomainError(ErrorCode.UNKNOWN_ROLE, f"The workflow has no role {role_name!r}.", [field])
    for i, party in enumerate(party_ids):
        await check_party(ctx.session, party, f"partyIds.{i}")
    await _allowed(ctx, role, party_ids)
    return role


async def reassign(
    session: AsyncSession,
    *,
    actor: Actor,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    role: str,
    party_ids: list[str],
    mode: str = "REPLACE",
) -> CaseRow:
    """Change who plays a role. Needs workflowItem.assign, or playing a role the spec lets
    reassign this one (``assignable_by``). A role that has players is never left with none
    (INVALID_INPUT): an action assigned to it would wait for no one."""
    if mode not in REASSIGN_MODES:
        raise DomainError(ErrorCode.INVALID_INPUT, "mode is REPLACE, ADD or REMOVE.", ["mode"])
    ctx = await load_case(session, case_id=case_id, workflow_item_id=workflow_item_id, lock=True)
    played = ctx.roles_of(actor.party_ids)
    held = await permissions.held_intents(session, actor=actor, resource_id=ctx.item.id)
    if not played and "workflowItem.view" not in held:  # before anything that tells the case exists
        raise case_not_found(case_id=case_id, workflow_item_id=workflow_item_id)
    spec_role = ctx.spec.roles.get(role)
    if (spec_role is None or not played.intersection(spec_role.assignable_by)) and "workflowItem.assign" not in held:
        raise DomainError(
            ErrorCode.NOT_ALLOWED,
            "You may not do workflowItem.assign on this workflow item.",
            ["caseId" if case_id is not None else "workflowItemId"],
        )
    await check_assignment(ctx, role, party_ids if mode != "REMOVE" else [], "role")
    before = sorted(ctx.roles.get(role, set()))
    if mode == "REPLACE":
        after = list(dict.fromkeys(party_ids))
    elif mode == "ADD":
        after = before + [p for p in dict.fromkeys(party_ids) if p not in before]
    else:
        after = [p for p in before if p not in party_ids]
    if sorted(after) == before:
        return ctx.case
    if before and not after:  # its assigned actions would wait for no one
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"The role {role!r} cannot be left with no one: replace its players with the parties who take over.",
            ["partyIds"],
        )
    await set_role_parties(ctx, role, after)
    ctx.case.version += 1
    entry = await activity.record(
        session,
        kind="role_reassigned",
        actor_id=actor.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        data={"role": role, "mode": mode, "before": before, "after": sorted(after)},
    )
    await notifications.notify(ctx, entry, assigned_parties=set(after) - set(before))
    return ctx.case


async def pick_list(
    session: AsyncSession,
    *,
    actor: Actor,
    case: CaseRow,
    role: str,
    limit: int = PICK_LIST_LENGTH,
    recent: int = PICK_LIST_CASES,
) -> list[str]:
    """Likely assignees for one role of one case (see ``pick_lists``)."""
    workflow = await session.get(Workflow, case.workflow_id)
    assert workflow is not None
    (result,) = await pick_lists(
        session, actor=actor, wanted=[(case.id, role)], workflows={case.id: workflow}, limit=limit, recent=recent
    )
    return result


def _recent_cases(session: AsyncSession, case_ids: list[str], recent: int) -> Any:
    """(target case, one of the ``recent`` newest other cases of its workflow, any version, and
    that case's item): the history a pick list ranks from, bounded however many cases the
    workflow has. Case ids grow with time (models/ids.py), so the newest are the highest. On
    PostgreSQL each version's newest are a backward range of ``ix_workflow_case_workflow_id``
    (workflow_id, id) read by a LATERAL join (tests/api/test_dashboard_plans.py holds that
    plan); SQLite, which has no LATERAL and no million cases, ranks every case of the
    workflow."""
    target, target_workflow, version = aliased(CaseRow), aliased(Workflow), aliased(Workflow)
    other = aliased(CaseRow)
    newest = (other.id.desc(),)
    base = (
        select(target.id.label("target_id"))
        .join(target_workflow, target_workflow.id == target.workflow_id)
        .join(version, version.short_name == target_workflow.short_name)
        .where(target.id.in_(case_ids))
    )
    if session.bind.dialect.name == "postgresql":
        found = (
            select(other.id, other.object_id)
            .where(other.workflow_id == version.id, other.id != target.id)
            .order_by(*newest)
            .limit(recent)
            .lateral("recent")
        )
        base = base.join(found, true())
        case_id, item_id = found.c.id, found.c.object_id
    else:
        base = base.join(other, and_(other.workflow_id == version.id, other.id != target.id))
        case_id, item_id = other.id, other.object_id
    rank = func.row_number().over(partition_by=target.id, order_by=case_id.desc())
    return base.add_columns(case_id.label("case_id"), item_id.label("item_id"), rank.label("n")).subquery("cases")


async def pick_lists(
    session: AsyncSession,
    *,
    actor: Actor,
    wanted: Sequence[tuple[str, str]],
    workflows: Mapping[str, Any],
    limit: int = PICK_LIST_LENGTH,
    recent: int = PICK_LIST_CASES,
) -> list[list[str]]:
    """Likely assignees for each (case id, role) in ``wanted``, in that order: parties playing
    the role in the ``recent`` newest other cases of the same workflow (any version) that
    ``actor`` may view, most frequent first (ties by party id), then the role's allowed parties;
    at most ``limit``. Cases the actor may not view count for nothing: their players are not
    named.

    Why the newest cases and not every case: counting the players of every case of a workflow
    costs as much as the workflow has cases (past 10 s at a million, issue 52), and who played
    the role lately is the better guess anyway. A count kept per role would be bounded too, but
    it would count cases the viewer may not see; the newest cases are checked one by one.

    One statement for all the pairs, however many (a page of cases asks every role of each):
    the counts are grouped per (case, role, party) and ranked per (case, role) with a window
    function, so each pair keeps its own top ``limit``. ``workflows`` maps each case id to its
    workflow row, whose spec names the allowed parties."""
    pairs = list(dict.fromkeys(wanted))
    if not pairs:
        return [[] for _ in wanted]
    cases = _recent_cases(session, list(dict.fromkeys(case_id for case_id, _ in pairs)), recent)
    # Each of those cases' players of the roles asked: probes of their key. On PostgreSQL a
    # LATERAL fenced by OFFSET 0, so that the planner never joins them by scanning every role
    # player (it would at a few thousand cases).
    roles = sorted({role for _, role in pairs})
    if session.bind.dialect.name == "postgresql":
        players = (
            select(CaseRoleParty.role, CaseRoleParty.party_id)
            .where(CaseRoleParty.case_id == cases.c.case_id, CaseRoleParty.role.in_(roles))
            .offset(0)
            .lateral("players")
        )
        joined = true()
    else:  # SQLite has no LATERAL: a join, which it plans as probes anyway
        players = CaseRoleParty.__table__.alias("players")
        joined = and_(players.c.case_id == cases.c.case_id, players.c.role.in_(roles))
    count = func.count()
    ranked = (
        select(
            cases.c.target_id.label("case_id"),
            players.c.role,
            players.c.party_id,
            func.row_number()
            .over(partition_by=(cases.c.target_id, players.c.role), order_by=(count.desc(), players.c.party_id))
            .label("rank"),
        )
        .select_from(cases)
        .join(players, joined)
        .where(
            cases.c.n <= recent,
            tuple_(cases.c.target_id, players.c.role).in_(pairs),
            item_visible(actor, cases.c.item_id),
        )
        .group_by(cases.c.target_id, players.c.role, players.c.party_id)
        .subquery()
    )
    rows = await session.execute(
        select(ranked.c.case_id, ranked.c.role, ranked.c.party_id)
        .where(ranked.c.rank <= limit)
        .order_by(ranked.c.case_id, ranked.c.role, ranked.c.rank)
    )
    played: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case_id, role, party in rows:
        played[(case_id, role)].append(party)  # most frequent first
    results = []
    for case_id, role in wanted:
        result = list(played.get((case_id, role), ()))
        spec_role = spec_of(workflows[case_id]).roles.get(role)
        for party in spec_role.allowed_parties if spec_role else ():
            if party not in result:
                result.append(party)
        results.append(result[:limit])
    return results
