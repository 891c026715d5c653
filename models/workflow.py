"""Workflow definitions and the running state of cases.

A definition is stored as its validated spec JSON and loaded into an in-memory model by
``engine.spec.specs``; cases refer to states, roles and actions by their short names.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from models.types import JSONType, UTCDateTime, utcnow


class Workflow(SQLModel, table=True):
    __tablename__ = "workflow"
    __table_args__ = (UniqueConstraint("short_name", "version"),)

    id: str = Field(primary_key=True)
    short_name: str = Field(index=True)
    pretty_name: str
    version: int
    spec: dict[str, Any] = Field(sa_column=Column(JSONType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    # A retired version takes no new subproject or item (engine/spec/versions.py); its cases run on.
    retired_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))
    retired_by: str | None = None


class Case(SQLModel, table=True):
    __tablename__ = "workflow_case"
    # The sweepers' question "which suspension ends next" (engine/cases/lifecycle.py), answered from the index.
    # A pick list's history: a workflow version's newest cases, a backward range (engine/cases/assignment.py).
    __table_args__ = (
        Index("ix_workflow_case_status_suspended_until", "status", "suspended_until"),
        Index("ix_workflow_case_workflow_id_id", "workflow_id", "id"),
    )

    id: str = Field(primary_key=True)
    workflow_id: str = Field(foreign_key="workflow.id", index=True)
    object_id: str = Field(unique=True, foreign_key="workflow_item.id")
    status: str = "ACTIVE"
    suspended_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    version: int = 0
    created_by: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    # The case fields its workflow declares, by name, as set by its actions (engine/cases/case_fields.py).
    fields: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSONType, nullable=False, server_default="{}")
    )


class CaseState(SQLModel, table=True):
    """The current state of one FSM scope: '' is the top level, else the enabled-action id
    of the running child workflow."""

    __tablename__ = "case_state"

    case_id: str = Field(primary_key=True, foreign_key="workflow_case.id")
    scope: str = Field(default="", primary_key=True)
    state: str


class CaseRoleParty(SQLModel, table=True):
    __tablename__ = "case_role_party"
    __table_args__ = (Index("ix_case_role_party_party_case", "party_id", "case_id"),)  # covering, as above

    case_id: str = Field(primary_key=True, foreign_key="workflow_case.id")
    role: str = Field(primary_key=True)
    party_id: str = Field(primary_key=True)


class EnabledAction(SQLModel, table=True):
    """One instance of an enabled action; kept after completion for history and gating."""

    __tablename__ = "enabled_action"
    __table_args__ = (
        Index("ix_enabled_action_case_status", "case_id", "status"),
        Index("ix_enabled_action_fire_at", "status", "fire_at"),
    )

    id: str = Field(primary_key=True)
    case_id: str = Field(foreign_key="workflow_case.id")
    action: str
    scope: str = ""
    parent_id: str | None = None
    trigger: str = "user"
    # The role expected to act (set only when enabled in one of the action's assigned states).
    assigned_role: str | None = None
    assignee_party_id: str | None = None
    status: str = "ENABLED"
    fire_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    enabled_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    completed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    executed_by: str | None = None  # the user who executed it (none for timers and automatic actions)


class Idempotency(SQLModel, table=True):
    __tablename__ = "idempotency"

    actor_id: str = Field(primary_key=True)
    operation: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    request_hash: str
    response: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
