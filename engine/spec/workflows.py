"""Workflow definitions: define (versioned), look up, and load from spec files."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode
from engine.jobs.outbox import check_job, check_workflow_job
from engine.people import permissions
from engine.people.actors import Actor
from engine.registry import assignee_callbacks, enable_conditions, on_fire_callbacks, side_effects
from engine.spec import specs, versions
from engine.spec.diagnostics import Diagnostic, InvalidSpec, errors_of, finding
from engine.spec.spec_analysis import analyze
from engine.spec.spec_checker import MAX_ERRORS
from engine.spec.specs import WorkflowSpec
from models import Group, User, Workflow, new_id

BUILTIN_DIR = Path(__file__).parent / "builtin_workflows"
_spec_cache: dict[str, WorkflowSpec] = {}


def parse_spec(raw: Any, *, defining: bool = True) -> WorkflowSpec:
    """Validate a spec. ``defining``: a definition, checked against this server's configuration
    too (a webhook's endpoint must be configured); a stored one is only re-read, and keeps
    working when the configuration changes (its jobs then fail, visibly, when they run)."""
    return specs.parse(
        raw,
        known_callbacks=set(assignee_callbacks()),
        known_side_effects=set(side_effects()),
        known_on_fire=set(on_fire_callbacks()),
        known_enable_conditions=set(enable_conditions()),
        check_job=lambda kind, args: check_job(kind, args, defining=defining),
    )


def spec_of(workflow: Workflow) -> WorkflowSpec:
    """The parsed spec of a stored definition; definitions never change, so this caches forever."""
    cached = _spec_cache.get(workflow.id)
    if cached is None:
        cached = _spec_cache[workflow.id] = parse_spec(workflow.spec, defining=False)
    return cached


def cached_short_name(workflow_id: str) -> str | None:
    """The short name of a definition whose spec this process has read (for metrics labels),
    else None: never a query."""
    cached = _spec_cache.get(workflow_id)
    return cached.short_name if cached is not None else None


async def spec_by_id(session: AsyncSession, workflow_id: str) -> WorkflowSpec:
    """The spec of a stored definition, read from the database only once per process."""
    cached = _spec_cache.get(workflow_id)
    if cached is None:
        cached = spec_of(await get_workflow(session, workflow_id))
    return cached


async def specs_by_ids(session: AsyncSession, workflow_ids: set[str]) -> dict[str, WorkflowSpec]:
    """The specs of several stored definitions: those this process has not read yet, in one
    statement (engine/notify/sentences.py phrases entries of many workflows at once)."""
    found = {i: _spec_cache[i] for i in workflow_ids if i in _spec_cache}
    missing = set(workflow_ids) - set(found)
    if missing:
        for workflow in await session.scalars(select(Workflow).where(Workflow.id.in_(missing))):
            found[workflow.id] = spec_of(workflow)
    return found


@dataclass
class Defined:
    """A definition stored, with what the checks found that does not refuse it (warnings)."""

    workflow: Workflow
    diagnostics: list[Diagnostic] = field(default_factory=list)


def check_spec(raw: Any) -> tuple[WorkflowSpec | None, list[Diagnostic]]:
    """Every finding about a new definition that needs no database (at most MAX_ERRORS): the
    key-by-key checks, then (for a spec that passed them) the whole-spec analysis. The spec is None when refused
    key by key. ``caseway check-workflow`` runs this offline."""
    try:
        parsed = parse_spec(raw)
    except InvalidSpec as refused:
        return None, refused.diagnostics
    return parsed, [*_job_findings(parsed), *analyze(parsed)][:MAX_ERRORS]


def _job_findings(spec: WorkflowSpec) -> list[Diagnostic]:
    """What the job kinds find wrong with their jobs given the whole workflow (a webhook's
    endpoint configured to send a case field this workflow does not declare)."""
    places = [(("side_effects",), spec.jobs)]
    places += [(("actions", a.short_name, "side_effects"), a.jobs) for a in spec.actions.values()]
    return [
        finding("INVALID_SPEC", path, problem)
        for path, jobs in places
        for kind, args in jobs
        for problem in check_workflow_job(kind, args, workflow=spec.short_name, fields=list(spec.fields))
    ]


async def validate_workflow(session: AsyncSession, *, actor: Actor | None, spec: Any) -> list[Diagnostic]:
    """What defining ``spec`` would find, without defining it (validateWorkflow)."""
    if actor is not None:
        await permissions.require_global(session, actor=actor, intent="global.defineWorkflow")
    parsed, found = check_spec(spec)
    if parsed is not None:
        found = [*await _missing_parties(session, parsed), *found][:MAX_ERRORS]
    return found


async def define(session: AsyncSession, *, actor: Actor | None, spec: Any) -> Defined:
    """Store a new definition; a short name defined before gets the next version, and cases
    already running stay on the version they started with. Refused (InvalidSpec, every
    finding in it) when a check finds an ERROR; its warnings come back with the definition."""
    if actor is not None:
        await permissions.require_global(session, actor=actor, intent="global.defineWorkflow")
    parsed, found = check_spec(spec)
    if parsed is not None:
        found = [*await _missing_parties(session, parsed), *found][:MAX_ERRORS]
    if parsed is None or errors_of(found):
        raise InvalidSpec(found)
    latest = await session.scalar(select(func.max(Workflow.version)).where(Workflow.short_name == parsed.short_name))
    version = (latest or 0) + 1
    found = [*found, *await versions.strands_cases(session, parsed, version)]
    workflow = Workflow(
        id=new_id("wf"),
        short_name=parsed.short_name,
        pretty_name=parsed.pretty_name,
        version=version,
        spec=parsed.normalized,
    )
    session.add(workflow)
    await session.flush()
    _spec_cache[workflow.id] = parsed
    return Defined(workflow, found)


async def define_workflow(session: AsyncSession, *, actor: Actor | None, spec: Any) -> Workflow:
    """``define``, for callers that need only the stored definition."""
    return (await define(session, actor=actor, spec=spec)).workflow


async def _missing_parties(session: AsyncSession, spec: WorkflowSpec) -> list[Diagnostic]:
    """Roles may only name users and groups that exist: a static party that doesn't would make
    every new case fail to assign the role. (One statement, only for specs that name parties.)"""
    named = {p for role in spec.roles.values() for p in (*role.static_parties, *role.allowed_parties)}
    if not named:
        return []
    found = set(
        (
            await session.scalars(
                select(User.id).where(User.id.in_(named)).union(select(Group.id).where(Group.id.in_(named)))
            )
        ).all()
    )
    return [
        finding(
            "INVALID_SPEC",
            ("roles", role.short_name, key),
            f"Role {role.short_name!r} names {party!r}, which is not a user or group.",
        )
        for role in spec.roles.values()
        for key, parties in (("static_parties", role.static_parties), ("allowed_parties", role.allowed_parties))
        for party in parties
        if party not in found
    ]


async def latest_workflow(session: AsyncSession, *, short_name: str, field: str = "workflow") -> Workflow:
    """The version a new subproject takes: the latest one not retired (engine/spec/versions.py)."""
    workflow = await session.scalar(
        select(Workflow)
        .where(Workflow.short_name == short_name)
        .order_by(Workflow.retired_at.is_(None).desc(), Workflow.version.desc())
        .limit(1)
    )
    if workflow is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"No workflow named {short_name!r} is defined.", [field])
    if workflow.retired_at is not None:
        raise DomainError(
            ErrorCode.WORKFLOW_RETIRED, f"Every version of the workflow {short_name!r} is retired.", [field]
        )
    return workflow


async def get_workflow(session: AsyncSession, workflow_id: str) -> Workflow:
    workflow = await session.get(Workflow, workflow_id)
    if workflow is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"No workflow with id {workflow_id!r}.", ["workflowId"])
    return workflow


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML loader that rejects duplicate keys instead of silently keeping the last."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        if key in mapping:
            raise DomainError(
                ErrorCode.INVALID_SPEC, f"Duplicate key {key!r} (line {key_node.start_mark.line + 1}).", ["spec"]
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DomainError(ErrorCode.INVALID_SPEC, f"Duplicate key {key!r}.", ["spec"])
        result[key] = value
    return result


def load_spec_file(path: Path) -> Any:
    text = path.read_text()
    if path.suffix == ".json":
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    return yaml.load(text, Loader=_UniqueKeyLoader)


def _spec_files(directory: Path) -> list[Path]:
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml"), *directory.glob("*.json")])


async def sync_spec_files(session: AsyncSession, directory: Path) -> list[Workflow]:
    """Define each spec file whose content differs from the latest stored version."""
    defined = []
    for path in _spec_files(directory):
        parsed = parse_spec(load_spec_file(path))
        latest = await session.scalar(
            select(Workflow).where(Workflow.short_name == parsed.short_name).order_by(Workflow.version.desc()).limit(1)
        )
        if latest is None or latest.spec != parsed.normalized:
            defined.append(await define_workflow(session, actor=None, spec=parsed.normalized))
    return defined
