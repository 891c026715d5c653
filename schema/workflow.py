"""Workflow definitions as clients read them: roles, states, actions and the spec itself."""

from enum import Enum

import strawberry

from engine.diagram import render
from engine.specs import ActionSpec, RoleSpec, StateSpec
from engine.workflows import spec_of
from schema.base import JSON, Node, by_id_prefix, row_type


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
    new_state: str | None
    timeout_seconds: int | None
    children: list[str]

    is_type_of = row_type(ActionSpec)

    @strawberry.field
    def trigger(self) -> Trigger:
        return Trigger(self.trigger)  # type: ignore[arg-type]


@strawberry.type(description="A versioned workflow definition; cases stay on the version they started with.")
class Workflow(Node):
    short_name: str
    pretty_name: str
    version: int

    is_type_of = by_id_prefix("Workflow")

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

    @strawberry.field(description="The top-level state machine as a Mermaid or Graphviz DOT diagram.")
    def diagram(self, format: DiagramFormat = DiagramFormat.MERMAID) -> str:
        return render(spec_of(self), format.value)  # type: ignore[arg-type]
