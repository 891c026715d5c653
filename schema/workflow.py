"""Workflow definitions as clients read them: roles, states, actions and the spec itself."""

import asyncio
from collections import OrderedDict
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry

from engine.spec import diagnostics
from engine.spec.diagram import render
from engine.spec.specs import ActionSpec, RoleSpec, StateSpec
from engine.spec.workflows import spec_of
from models import Workflow as WorkflowRow
from resolvers import retirement
from resolvers import workflows as workflow_checks
from schema.base import JSON, AppInfo, Node, UserError, by_id_prefix, row_type
from schema.limits import COST

# A diagram walks every action against every state: ~1 s for a 3,000-state workflow. Its
# weight in a query's cost stands for that; its text is kept per workflow version and format
# (both immutable), rendered off the event loop, once however many fields ask at the same time.
DIAGRAM_COST = 100
_DIAGRAMS_KEPT = 128
_diagrams: OrderedDict[tuple[str, str], str] = OrderedDict()
_rendering: dict[tuple[str, str], asyncio.Future[str]] = {}


@strawberry.enum
class Trigger(Enum):
    USER = "user"
    AUTO = "auto"
    INIT = "init"
    TIME = "time"
    WORKFLOW = "workflow"
    PARALLEL = "parallel"
    DYNAMIC = "dynamic"


@strawberry.enum
class DiagramFormat(Enum):
    MERMAID = "MERMAID"
    DOT = "DOT"


@strawberry.type
class Role:
    short_name: str
    pretty_name: str

    is_type_of = row_type(RoleSpec)


@strawberry.type
class State:
    short_name: str
    pretty_name: str
    terminal: bool
    hidden_fields: list[str]

    is_type_of = row_type(StateSpec)


@strawberry.type(description="A code a person picks when executing an action, e.g. fixed or wontfix for a bug.")
class Resolution:
    code: str
    pretty_name: str


@strawberry.type(description="One outcome of an action and the state it leads to.")
class ActionOutput:
    name: str
    new_state: str


@strawberry.type(description="One of an action's routes: the state it leads to when its condition holds.")
class ActionRoute:
    when: str | None = strawberry.field(description="A CEL condition; null for the last route, the default.")
    to: str


@strawberry.type(description="A choice of an enum field.")
class FieldChoice:
    code: str
    label: str


@strawberry.type(description='A case field its workflow declares (docs/workflows.md, "Fields and rules").')
class CaseField:
    name: str
    type: str = strawberry.field(
        description="string, text, integer, number, money, boolean, date, datetime, enum or user."
    )
    label: str
    help: str | None
    required: bool
    max_length: int | None
    pattern: str | None
    min: float | None
    max: float | None
    choices: list[FieldChoice]


def _case_field(spec: Any) -> CaseField:
    return CaseField(
        name=spec.name,
        type=spec.type,
        label=spec.label,
        help=spec.help,
        required=spec.required,
        max_length=spec.max_length,
        pattern=spec.pattern,
        min=spec.low,
        max=spec.high,
        choices=[FieldChoice(code=c, label=text) for c, text in spec.choices],
    )


@strawberry.type(description="A step of a workflow. Roles and states are named by their short names.")
class Action:
    short_name: str
    pretty_name: str
    pretty_past_tense: str
    assigned_role: str | None
    allowed_roles: list[str]
    privileges: list[str]
    enabled_states: list[str]
    assigned_states: list[str]
    always_enabled: bool
    attach_documents: bool = strawberry.field(
        description="Whoever executes the action may attach documents with it (executeAction's documents)."
    )
    new_state: str | None
    timeout_seconds: int | None
    children: list[str]
    fields: list[str] = strawberry.field(description="The case fields it may set (executeAction's fields).")
    required_fields: list[str] = strawberry.field(description="The case fields that must have a value when it fires.")
    log_title: str | None = strawberry.field(description="The title its log entries take, with placeholders.")

    is_type_of = row_type(ActionSpec)

    @strawberry.field(description="The CEL condition asked before it is enabled, if any.")
    def enabled_when(self) -> str | None:
        rule = self.enabled_when  # type: ignore[attr-defined]
        return None if rule is None else rule.source

    @strawberry.field(description="Its routes in order: the first whose condition holds decides the new state.")
    def routes(self) -> list[ActionRoute]:
        return [
            ActionRoute(when=None if r.when is None else r.when.source, to=r.to)
            for r in self.routes  # type: ignore[attr-defined]
        ]

    @strawberry.field
    def trigger(self) -> Trigger:
        return Trigger(self.trigger)  # type: ignore[arg-type]

    @strawberry.field(description="The resolution codes to pick from (executeAction's resolution), in spec order.")
    def resolutions(self) -> list[Resolution]:
        return [Resolution(code=c, pretty_name=p) for c, p in self.resolutions]  # type: ignore[attr-defined]

    @strawberry.field(description="The outputs to pick from (executeAction's output); empty: new_state applies.")
    def outputs(self) -> list[ActionOutput]:
        return [ActionOutput(name=n, new_state=s) for n, s in self.outputs]  # type: ignore[attr-defined]


@strawberry.type(description="A versioned workflow definition; cases stay on the version they started with.")
class Workflow(Node):
    short_name: str
    pretty_name: str
    version: int

    is_type_of = by_id_prefix("Workflow")

    @strawberry.field(
        description="When the version was retired (retireWorkflow): no new subproject or item may use it; "
        "its running cases run on. Null while it is not retired."
    )
    async def retired_at(self, info: AppInfo) -> datetime | None:
        return await retirement.retired_at(info.context, self.id)  # type: ignore[attr-defined]

    @strawberry.field(description="The spec as defined (defaults omitted): defineWorkflow(spec) clones it.")
    def spec(self) -> JSON:
        return self.spec  # type: ignore[return-value]

    @strawberry.field
    def roles(self) -> list[Role]:
        return list(spec_of(self).roles.values())  # type: ignore[arg-type]

    @strawberry.field
    def states(self) -> list[State]:
        return list(spec_of(self).states.values())  # type: ignore[arg-type]

    @strawberry.field
    def actions(self) -> list[Action]:
        return list(spec_of(self).actions.values())  # type: ignore[arg-type]

    @strawberry.field(description="The case fields it declares, in the spec's order.")
    def fields(self) -> list[CaseField]:
        return [_case_field(field) for field in spec_of(self).fields.values()]  # type: ignore[arg-type]

    @strawberry.field(
        description="The top-level state machine as a Mermaid or Graphviz DOT diagram.", metadata={COST: DIAGRAM_COST}
    )
    async def diagram(self, format: DiagramFormat = DiagramFormat.MERMAID) -> str:
        return await diagram_of(self, format.value)  # type: ignore[arg-type]


async def diagram_of(workflow: WorkflowRow, fmt: str) -> str:
    """The diagram of a workflow version in a format, rendered once and remembered."""
    key = (workflow.id, fmt)
    text = _diagrams.get(key)
    if text is not None:
        _diagrams.move_to_end(key)
        return text
    pending = _rendering.get(key)
    if pending is None:
        pending = _rendering[key] = asyncio.ensure_future(asyncio.to_thread(lambda: render(spec_of(workflow), fmt)))
        pending.add_done_callback(lambda done: _remember(key, done))
    # Shielded: one request stopped by its time limit leaves the rendering to the others.
    return await asyncio.shield(pending)


def _remember(key: tuple[str, str], done: "asyncio.Future[str]") -> None:
    _rendering.pop(key, None)
    if not done.cancelled() and done.exception() is None:
        _diagrams[key] = done.result()
        if len(_diagrams) > _DIAGRAMS_KEPT:
            _diagrams.popitem(last=False)


DiagnosticSeverity = strawberry.enum(
    diagnostics.Severity,
    name="DiagnosticSeverity",
    description="ERROR: defineWorkflow refuses the spec (INVALID_SPEC). WARNING: it is defined, and told.",
)


@strawberry.type(description='A finding about a workflow spec (docs/workflows.md, "Checks at definition").')
class Diagnostic:
    code: str = strawberry.field(
        description="What is wrong: INVALID_SPEC (a key, a type, a name), UNREACHABLE_STATE, NO_PATH_TO_TERMINAL, "
        "DEAD_ACTION, GUARD_UNSATISFIABLE, AUTO_LOOP, CHILD_WORKFLOW_MISSING, CHILD_RECURSION (errors); "
        "ROLE_NEVER_FILLED, TIMER_REPEATS (warnings)."
    )
    severity: DiagnosticSeverity
    path: list[str] = strawberry.field(
        description='The keys from the spec\'s top to the one at fault, e.g. ["states", "review"]; empty: the whole.'
    )
    message: str
    hint: str | None = strawberry.field(description="How to fix it, when the message does not already say.")

    is_type_of = row_type(diagnostics.Diagnostic)


@strawberry.type
class ValidateWorkflowPayload:
    diagnostics: list[Diagnostic] = strawberry.field(
        default_factory=list, description="Every finding; none with severity ERROR: defineWorkflow would accept it."
    )
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def validate_workflow(info: AppInfo, spec: JSON) -> ValidateWorkflowPayload:
    found, errors = await workflow_checks.validate_workflow(info.context, spec)
    return ValidateWorkflowPayload(diagnostics=found, user_errors=errors)  # type: ignore[arg-type]


validate_workflow_field = strawberry.field(
    resolver=validate_workflow,
    description="Check a workflow spec without defining it: every finding defineWorkflow would report, errors "
    "and warnings (needs global.defineWorkflow, as defining does).",
)
