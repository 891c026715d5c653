"""Durable jobs: side effects that leave
the database, written in the transaction of the action they come from (the outbox) and run
after it commits by a job runner (engine/jobs, server/job_runner.py)."""

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, text
from sqlmodel import Field, SQLModel

from models.types import JSONType, UTCDateTime, utcnow

JOB_STATES = ("PENDING", "RUNNING", "STALLED", "COMPLETED", "FAILED")


class Job(SQLModel, table=True):
    """One job. ``input`` never changes after creation; ``progress`` only gains keys. While
    RUNNING, ``next_attempt_at`` is the lease: past it, the runner that claimed the job is
    presumed dead and any runner reconciles the job. ``attempts`` counts claims to run it and
    fences outcomes: a runner records its outcome only while the attempt it ran is the job's."""

    __tablename__ = "job"
    __table_args__ = (
        # The runners' claim: jobs not finished, by due time (PENDING/STALLED: when to try;
        # RUNNING: the lease). Finished jobs drop out of the index.
        Index(
            "ix_job_due",
            "next_attempt_at",
            postgresql_where=text("state IN ('PENDING', 'RUNNING', 'STALLED')"),
            sqlite_where=text("state IN ('PENDING', 'RUNNING', 'STALLED')"),
        ),
        Index("ix_job_serialization_key_id", "serialization_key", "id"),  # one in flight per key, oldest first
        Index("ix_job_case_id", "case_id", "id"),  # Case.jobs, jobs(caseId:)
        Index("ix_job_state_id", "state", "id"),  # jobs(state:)
    )

    id: str = Field(primary_key=True)
    kind: str
    case_id: str = Field(foreign_key="workflow_case.id")
    workflow_item_id: str  # the case's item, whose visibility is the job's
    activity_id: str  # the log entry of the action the job came from
    state: str = "PENDING"
    step: str = ""
    attempts: int = 0
    next_attempt_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    input: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    error: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONType))
    idempotency_key: str
    serialization_key: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    updated_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
