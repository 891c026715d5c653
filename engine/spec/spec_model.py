"""The workflow spec model: what ``engine.spec.specs.parse`` makes of a spec, immutable.

Read by the engine wherever a case moves; built only by the parser (engine/spec/specs.py), whose
checks each field below has passed.
"""

from dataclasses import dataclass, field
from typing import Any

from engine.spec.child_specs import Condition
from engine.spec.defaults import names
from engine.spec.field_specs import FieldSpec, Route
from engine.spec.reminder_specs import Escalation, Reminders
from engine.spec.rules import Rule

__all__ = ["TRIGGERS", "UNATTENDED_TRIGGERS", "ActionSpec", "RoleSpec", "StateSpec", "WorkflowSpec"]

TRIGGERS = ("user", "auto", "init", "time", "workflow", "parallel", "dynamic")
# Triggers whose actions fire without a person choosing: no caller gives them an output or a resolution.
UNATTENDED_TRIGGERS = ("auto", "time", "init")


def _defaulted(key: str, default: str) -> str:
    """``names``' reading of a spec that gives no name: each one its default."""
    return default


@dataclass(frozen=True, slots=True)
class RoleSpec:
    short_name: str
    pretty_name: str
    callbacks: tuple[str, ...] = ()
    allowed_parties: tuple[str, ...] = ()
    static_parties: tuple[str, ...] = ()
    assignable_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StateSpec:
    short_name: str
    pretty_name: str
    terminal: bool = False
    hidden_fields: tuple[str, ...] = ()
    hidden_visible_to: tuple[str, ...] = ()  # roles that see the hidden case fields (admins always do)
    scope: str | None = None  # the parent action of a child workflow's states

    @classmethod
    def named(cls, short_name: str) -> "StateSpec":
        """A state known by its short name alone (one a log names that no version defines, or
        before its definition is read), with the spec's default names (engine/spec/defaults.py)."""
        return cls(short_name=short_name, **names(_defaulted, short_name))


@dataclass(frozen=True, slots=True)
class ActionSpec:
    short_name: str
    pretty_name: str
    pretty_past_tense: str
    trigger: str = "user"
    assigned_role: str | None = None
    allowed_roles: tuple[str, ...] = ()
    privileges: tuple[str, ...] = ()
    enabled_states: tuple[str, ...] = ()
    assigned_states: tuple[str, ...] = ()
    always_enabled: bool = False
    # Whoever may execute the action may attach documents with it (executeAction's documents),
    # without workflowItem.update: an invoice on "submit" (engine/documents/records.py).
    attach_documents: bool = False
    new_state: str | None = None
    timeout_seconds: int | None = None
    side_effects: tuple[str, ...] = ()
    jobs: tuple[tuple[str, dict[str, Any]], ...] = ()  # (kind, args): the outbox (engine/jobs/outbox.py)
    depends_on: tuple[tuple[str, int, int | None], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    on_fire: str | None = None  # the callback that picks the output (engine.registry.on_fire_callbacks)
    resolutions: tuple[tuple[str, str], ...] = ()  # (code, pretty name), in the spec's order
    enable_conditions: tuple[str, ...] = ()  # callbacks asked before each enabling
    parent: str | None = None
    children: tuple[str, ...] = ()
    for_each: tuple[tuple[str, str], ...] = ()  # (role, per_role|per_member|per_user): DYNAMIC
    complete_when: tuple[Condition, ...] = ()  # in the spec's order: the first that holds fires
    has_scope: bool = False  # the parent's children run in child FSM scopes with their own states
    reminders: Reminders | None = None  # remind the assignees while it waits (engine/cases/reminders.py)
    escalate: Escalation | None = None  # tell a role once it has waited that long
    fields: tuple[str, ...] = ()  # the case fields it may set (engine/cases/case_fields.py)
    required_fields: tuple[str, ...] = ()  # those that must have a value once it fires
    enabled_when: Rule | None = None  # a CEL condition asked before each enabling (engine/spec/rules.py)
    routes: tuple[Route, ...] = ()  # the first whose condition holds decides the new state
    log_title: str | None = None  # the log entry's title, with placeholders

    @classmethod
    def named(cls, short_name: str) -> "ActionSpec":
        """An action known by its short name alone (one a log names that no version defines, or
        before its definition is read), with the spec's default names (engine/spec/defaults.py)."""
        return cls(short_name=short_name, **names(_defaulted, short_name, ("pretty_name", "pretty_past_tense")))

    def is_enabled_in(self, state: str) -> bool:
        return self.always_enabled or state in self.enabled_states or state in self.assigned_states

    def is_assigned_in(self, state: str) -> bool:
        return self.assigned_role is not None and state in self.assigned_states

    def route_targets(self) -> tuple[str, ...]:
        return tuple(route.to for route in self.routes)

    def output_state(self, output: str) -> str | None:
        """The state an output leads to; None for an output the action does not declare."""
        return next((state for name, state in self.outputs if name == output), None)


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    short_name: str
    pretty_name: str
    roles: dict[str, RoleSpec]
    states: dict[str, StateSpec]
    actions: dict[str, ActionSpec]
    side_effects: tuple[str, ...]
    normalized: dict[str, Any] = field(repr=False)
    jobs: tuple[tuple[str, dict[str, Any]], ...] = ()  # declared on the workflow: made by every action
    has_children: bool = False  # any parent action: flat workflows skip engine.cases.children altogether
    fields: dict[str, FieldSpec] = field(default_factory=dict)  # the case fields, in the spec's order

    @property
    def has_automatic(self) -> bool:
        """Whether any action can fire without a user (AUTO, or a timeout of 0)."""
        return any(a.trigger == "auto" or a.timeout_seconds == 0 for a in self.actions.values())

    def scope_actions(self, parent: str | None) -> list[ActionSpec]:
        return [a for a in self.actions.values() if a.parent == parent]

    def scope_states(self, parent: str | None) -> list[StateSpec]:
        return [s for s in self.states.values() if s.scope == parent]

    def init_action(self, parent: str | None = None) -> ActionSpec | None:
        return next((a for a in self.scope_actions(parent) if a.trigger == "init"), None)

    def initial_state(self, parent: str | None = None) -> str:
        init = self.init_action(parent)
        if init is not None and init.new_state:
            return init.new_state
        return self.scope_states(parent)[0].short_name
