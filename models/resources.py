"""Projects, subprojects, workflow items, budgets, documents and permission grants."""

from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Index, false, text
from sqlmodel import Field, SQLModel

from models.types import JSONType, UTCDateTime, utcnow


class Project(SQLModel, table=True):
    __tablename__ = "project"

    id: str = Field(primary_key=True)
    display_name: str
    description: str = ""
    status: str = "OPEN"
    assignee_id: str | None = None
    created_by: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSONType, nullable=False))
    additional_data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))


class ProjectedBudget(SQLModel, table=True):
    __tablename__ = "projected_budget"

    resource_id: str = Field(primary_key=True)
    organization: str = Field(primary_key=True)
    currency: str = Field(primary_key=True)
    value: str


class Subproject(SQLModel, table=True):
    __tablename__ = "subproject"

    id: str = Field(primary_key=True)
    project_id: str = Field(foreign_key="project.id", index=True)
    display_name: str
    description: str = ""
    status: str = "OPEN"
    assignee_id: str | None = None
    created_by: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSONType, nullable=False))
    additional_data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    currency: str
    validator_id: str | None = None
    workflow_mode: str = "UNORDERED"
    workflow_id: str = Field(foreign_key="workflow.id")
    workflow_item_ordering: list[str] = Field(default_factory=list, sa_column=Column(JSONType, nullable=False))


class WorkflowItem(SQLModel, table=True):
    __tablename__ = "workflow_item"
    __table_args__ = (Index("ix_workflow_item_subproject_created", "subproject_id", "id"),)

    id: str = Field(primary_key=True)
    subproject_id: str = Field(foreign_key="subproject.id")
    project_id: str = Field(foreign_key="project.id", index=True)
    display_name: str
    description: str = ""
    created_by: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    due_date: date | None = None
    assignee_id: str | None = None
    amount_type: str = "N/A"
    amount: str | None = None
    currency: str | None = None
    exchange_rate: str | None = None
    billing_date: date | None = None
    reject_reason: str | None = None
    tags: list[str] = Field(default_factory=list, sa_column=Column(JSONType, nullable=False))
    additional_data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))


class Document(SQLModel, table=True):
    """A file attached to a workflow item (engine/documents). The bytes live in a document store
    under ``storage_key`` (content-addressed: the SHA-256), the row says what was attached, by
    whom, and whether it was removed. A removed document keeps its row and its bytes: the history
    names its hash, and ``verifyDocument`` can still prove them."""

    __tablename__ = "document"
    # Collection asks "does any row use this key?" for every stored file (migration 0014).
    __table_args__ = (Index("ix_document_storage_key", "storage_key"),)

    id: str = Field(primary_key=True)
    workflow_item_id: str = Field(foreign_key="workflow_item.id", index=True)
    file_name: str
    sha256: str
    link: str | None = None  # an external link (DESIGN §2); unused by uploads, which have storage_key
    storage_key: str | None = None
    size: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    content_type: str = "application/octet-stream"
    added_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    added_by: str | None = None
    removed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))
    removed_by: str | None = None


class Permission(SQLModel, table=True):
    """A grant. ``inherit``: on a project or subproject, the grant also reaches everything below
    it, now and later (engine/people/inheritance.py), held here once rather than copied."""

    __tablename__ = "permission"
    # Covering: a read's visibility check hashes the viewer's grants of one intent straight
    # from the index (migration 0005). The inherited ones again, alone (few rows): a read asks
    # for the viewer's reaching grants of one intent (migration 0020).
    __table_args__ = (
        Index("ix_permission_party_intent_resource", "party_id", "intent", "resource_id"),
        Index(
            "ix_permission_inherited",
            "party_id",
            "intent",
            "resource_id",
            postgresql_where=text("inherit"),
            sqlite_where=text("inherit"),
        ),
    )

    resource_id: str = Field(primary_key=True)
    intent: str = Field(primary_key=True)
    party_id: str = Field(primary_key=True)
    inherit: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
