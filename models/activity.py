"""The append-only activity log shared by every resource."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Index, Integer
from sqlmodel import Field, SQLModel

from models.types import JSONType, UTCDateTime, utcnow

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
SeqType = BigInteger().with_variant(Integer(), "sqlite")


class Activity(SQLModel, table=True):
    """One log entry. ``seq`` is the global cursor; ``chain`` names the resource whose hash
    chain the entry extends (``prev_hash`` -> ``hash``), so tampering with history shows."""

    __tablename__ = "activity"
    __table_args__ = (
        Index("ix_activity_project_seq", "project_id", "seq"),
        # A project's history filtered by kind or actor: a page is a range of the matching entries
        Index("ix_activity_project_kind_seq", "project_id", "kind", "seq"),
        Index("ix_activity_project_actor_seq", "project_id", "actor_id", "seq"),
        Index("ix_activity_subproject_seq", "subproject_id", "seq"),
        Index("ix_activity_item_seq", "workflow_item_id", "seq"),
        Index("ix_activity_case_seq", "case_id", "seq"),
        Index("ix_activity_chain_seq", "chain", "seq"),
        # A seq is never handed out twice, even after the newest rows are deleted.
        {"sqlite_autoincrement": True},
    )

    seq: int | None = Field(default=None, sa_column=Column(SeqType, primary_key=True, autoincrement=True))
    id: str = Field(unique=True)
    project_id: str | None = None
    subproject_id: str | None = None
    workflow_item_id: str | None = None
    case_id: str | None = None
    kind: str
    action: str | None = None
    actor_id: str | None = None
    on_behalf_of: str | None = None  # the absent user a deputy acted for (engine/people/deputies.py)
    via: str | None = None  # the name of the API token the actor acted through (engine/people/api_tokens.py)
    at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    comment: str | None = None
    title: str | None = None  # what the entry says in one sentence (engine/cases/titles.py); hashed when set
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSONType, nullable=False))
    chain: str
    prev_hash: str | None = None
    hash: str


class HistoryCheckpoint(SQLModel, table=True):
    """A signed head of one hash chain. The server signs ``(counter, chain, seq, hash, at)``
    and the checkpoint before it (its ``counter`` and ``signature``) with its secret key (never
    stored here): the checkpoints form a signed sequence of their own, appended to, never
    changed, so an edit, a truncation or a deleted chain up to its newest checkpoint is detected
    even by someone who could rewrite every row of ``activity``, a checkpoint deleted from the
    middle of the sequence shows as a gap, and a copy kept elsewhere (`caseway
    checkpoint-history --export`) shows the newest ones deleted or rolled back."""

    __tablename__ = "history_checkpoint"
    __table_args__ = (Index("ix_history_checkpoint_chain_counter", "chain", "counter"),)

    counter: int = Field(sa_column=Column(SeqType, primary_key=True, autoincrement=False))  # 1, 2, 3, … in order
    chain: str
    seq: int = Field(sa_column=Column(SeqType, nullable=False, index=True))
    hash: str
    signed_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    prev_counter: int | None = Field(default=None, sa_column=Column(SeqType, nullable=True))
    prev_signature: str | None = None
    signature: str


class ArchivedChain(SQLModel, table=True):
    """Where a hash chain's archived part ends (`caseway archive-history`, PostgreSQL): the seq
    and hash of its last entry that left the database, so its first entry still here verifies
    against it (``prev_hash``), and how many entries went. The resource columns are those of the
    chain's entries, so a history page knows the resource had entries archived."""

    __tablename__ = "archived_chain"
    __table_args__ = (
        Index("ix_archived_chain_project", "project_id"),
        Index("ix_archived_chain_subproject", "subproject_id"),
        Index("ix_archived_chain_item", "workflow_item_id"),
    )

    chain: str = Field(primary_key=True)
    project_id: str | None = None
    subproject_id: str | None = None
    workflow_item_id: str | None = None
    seq: int = Field(sa_column=Column(SeqType, nullable=False))
    hash: str
    at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))  # when its last archived entry was written
    entries: int = Field(sa_column=Column(SeqType, nullable=False))
    archived_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    # HMAC-SHA256 of chain, seq, hash, at and entries under the secret key (engine/history/
    # checkpoints.py ``sign_anchor``); None when archived without a key (migration 0028).
    signature: str | None = None
