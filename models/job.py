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
    presumed dead and any runner reconciles the job. ``attempts`` counts runs of the current
    series (``retryJob`` starts a new one). ``claims`` counts every claim ever, reconciliations
    and runs after a retry included, and is never reset: it is the fencing token, so a runner
    records an outcome only while the job is still RUNNING under its own claim.

    Jobs of one ``serialization_key`` run in the order of the log entries they came from
    (``Activity.seq``, which is commit order), not in id order (engine/jobs/records.py)."""

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
        # One in flight per key: the unfinished jobs of a key (finished ones drop out).
        Index(
            "ix_job_unfinished_key",
            "serialization_key",
            postgresql_where=text("state IN ('PENDING', 'RUNNING', 'STALLED')"),
            sqlite_where=text("state IN ('PENDING', 'RUNNING', 'STALLED')"),
        ),
        Index("ix_job_case_id", "case_id", "id"),  # Case.jobs, jobs(caseId:)
        Index("ix_job_state_id", "state", "id"),  # jobs(state:)
        # One job per key: a digest's key names its user and window, so it is made once
        # however many processes find it due (engine/notify/digests.py; migration 0017).
        Index("ux_job_idempotency_key", "idempotency_key", unique=True),
    )

    id: str = Field(primary_key=True)
    kind: str
    # The case, its item (whose visibility is the job's) and the log entry of the action the
    # job came from; none for a job of no case (an email: engine/notify/mail.py), which admins alone see.
    case_id: str | None = Field(default=None, foreign_key="workflow_case.id")
    workflow_item_id: str | None = None
    activity_id: str | None = None
    state: str = "PENDING"
    step: str = ""
    attempts: int = 0
    claims: int = 0  # the fencing token: +1 at every claim, never reset (migration 0011)
    next_attempt_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    input: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    error: dict[str, Any] | None = Field(default=None, sa_column=Column(JSONType))
    idempotency_key: str
    serialization_key: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    updated_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
