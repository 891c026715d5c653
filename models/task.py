"""The task index: one row per (party, enabled instance) that the party is expected to act on,
so that a task list starts at the viewer's parties instead of scanning every instance.

Derived data, kept by engine/cases/task_index.py (which says when and how); no foreign keys, so the
bulk seeder can fill it with one statement after loading everything else."""

from sqlmodel import Field, SQLModel


class TaskAssignment(SQLModel, table=True):
    """Party ``party_id`` (a user or a group) is assigned to the ENABLED user-triggered
    instance ``enabled_action_id`` of case ``case_id``, which is ACTIVE or COMPLETED: directly
    (the instance's assignee) or as a player of the instance's assigned role. The primary key
    is the task list's order: a party's tasks by instance id."""

    __tablename__ = "task_assignment"

    party_id: str = Field(primary_key=True)
    enabled_action_id: str = Field(primary_key=True)
    case_id: str = Field(index=True)  # a case's rows, replaced whenever the case changes
