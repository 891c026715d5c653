"""The task index: one row per (party, enabled instance) that the party is expected to act on,
so that a task list starts at the viewer's parties instead of scanning every instance; and each
party's number of rows, so that a task list's ``totalCount`` is read, not counted.

Derived data, kept by engine/cases/task_index.py (which says when and how); no foreign keys, so the
bulk seeder can fill it with one statement after loading everything else."""

from datetime import date

from sqlalchemy import Index
from sqlmodel import Field, SQLModel


class TaskAssignment(SQLModel, table=True):
    """Party ``party_id`` (a user or a group) is assigned to the ENABLED user-triggered
    instance ``enabled_action_id`` of case ``case_id``, which is ACTIVE or COMPLETED: directly
    (the instance's assignee) or as a player of the instance's assigned role. The primary key
    is the task list's order: a party's tasks by instance id. ``due_date`` is the item's, copied,
    so that the order by due date is a range of ``ix_task_assignment_party_due`` too."""

    __tablename__ = "task_assignment"
    __table_args__ = (Index("ix_task_assignment_party_due", "party_id", "due_date", "enabled_action_id"),)

    party_id: str = Field(primary_key=True)
    enabled_action_id: str = Field(primary_key=True)
    case_id: str = Field(index=True)  # a case's rows, replaced whenever the case changes
    due_date: date | None = None


class TaskCount(SQLModel, table=True):
    """How many rows of the task index name ``party_id``: kept with the rows, in the statement
    that settles them (a party with a million tasks is not counted per request)."""

    __tablename__ = "task_count"

    party_id: str = Field(primary_key=True)
    tasks: int = 0
