"""State visits: how long each case (and each child scope) stayed in each state.

A row per stay: a case or child scope enters a state (a visit starts) and leaves it (the visit
ends). Written by engine/history/visits.py in the transaction that moved the case, so a visit
commits with its log entry; read by engine/history/insights.py. The log stays the record; this
table is what it says about time, kept so that "where do cases wait" is one indexed read.
"""

from datetime import datetime

from sqlalchemy import Column, Float, Index
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime


class StateVisit(SQLModel, table=True):
    __tablename__ = "state_visit"
    __table_args__ = (
        # Leaving: the open visit of a scope (left_at IS NULL), found by its case and scope.
        Index("ix_state_visit_case_scope", "case_id", "scope", "left_at"),
        # Insights over a workflow (its versions), or a subproject of it.
        Index("ix_state_visit_workflow_state", "workflow_id", "scope_action", "state"),
        Index("ix_state_visit_subproject", "subproject_id", "workflow_id"),
    )

    id: str = Field(primary_key=True)
    case_id: str = Field(foreign_key="workflow_case.id")
    subproject_id: str  # the case's item's, so a subproject's visits are read without a join
    scope: str = ""  # '' is the case's top level, else the id of the instance owning the child scope
    scope_action: str | None = None  # the owning (parent) action's short name; None at the top level
    state: str
    workflow_id: str  # the definition (version) the case followed when it entered the state
    entered_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    entered_action: str | None = None  # the action that entered it (None: the initial state)
    left_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))
    left_action: str | None = None  # the action that left it (None: canceled or its scope closed)
    left_reason: str | None = None  # ACTION, CANCELED (the case) or CLOSED (the child scope's owner)
    # Suspended time within the visit: not waiting. While suspended, suspended_at is the start.
    suspended_seconds: float = Field(default=0.0, sa_column=Column(Float, nullable=False, server_default="0"))
    suspended_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))
