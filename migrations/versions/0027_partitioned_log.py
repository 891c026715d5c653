"""the activity log range-partitioned by seq on PostgreSQL, and the anchors of archived chains

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 00:10:00

PostgreSQL: ``activity`` becomes a table partitioned by range of ``seq`` (docs/scaling.md,
"Partitions of the log", says why seq and not the month of ``at``). The existing table is not
copied: it becomes the first partition, ``activity_part_0000``, for every seq below a bound B
a little above the last one handed out (the entries written while this migration runs land
below B). Holding the heavy lock briefly, at any size:

1. in a transaction of its own, a CHECK (seq < B) is added NOT VALID (an instant under the
   table's lock), then validated in another, which reads the whole table under a lock that lets
   writers go on (SHARE UPDATE EXCLUSIVE);
2. then, in the migration's transaction: the table and its indexes are renamed, the partitioned
   ``activity`` made with the same columns, primary key and indexes, the old table attached
   (the valid CHECK proves the partition's bound, so PostgreSQL does not read it again, and its
   indexes are attached to the parent's, not built), ``activity_seq_seq`` owned by the new
   table (dropping an archived partition must never drop the sequence), the next partition
   from B made, and a DEFAULT partition for a seq no partition holds yet; and
   ``caseway_chain_head`` (0004) answers, for a chain whose every entry was archived, the hash
   its archived part ended with, so that the chain goes on from it.

Step 1 commits what comes before it (the anchors' table too). A failure in step 2 leaves the
revision at 0026 with those committed; running the upgrade again finds them and goes on (the
CHECK made again with a new bound).

Measured at 1M entries (docs/scaling.md): the validation 0.67 s, writers going on; the locked
transaction 0.3 s. The downgrade copies the log under the lock: 103 s at 1M on a busy 2-core machine.

``id`` stays unique within each partition only: PostgreSQL's unique indexes on a partitioned
table must include its key. Ids are generated (``models.new_id``: random), never chosen by a
client, so they stay unique across partitions too; each partition keeps a unique index on it.
Later partitions are made ahead of need by every server process (engine/history/partitions.py).

SQLite: the log stays one table; only ``archived_chain`` is made (empty: archiving is
PostgreSQL's alone).
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_INDEXES = {
    "ix_activity_project_seq": "project_id, seq",
    "ix_activity_project_kind_seq": "project_id, kind, seq",
    "ix_activity_project_actor_seq": "project_id, actor_id, seq",
    "ix_activity_subproject_seq": "subproject_id, seq",
    "ix_activity_item_seq": "workflow_item_id, seq",
    "ix_activity_case_seq": "case_id, seq",
    "ix_activity_chain_seq": "chain, seq",
}
_FIRST = "activity_part_0000"
# A chain whose every entry was archived goes on from its archived part's last hash.
_HEAD = """
CREATE OR REPLACE FUNCTION caseway_chain_head(chain_id text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(730522, hashtext(chain_id));
    RETURN coalesce(
        (SELECT hash FROM activity WHERE chain = chain_id ORDER BY seq DESC LIMIT 1),
        (SELECT hash FROM archived_chain WHERE chain = chain_id)
    );
END
$$
"""
_HEAD_BEFORE = """
CREATE OR REPLACE FUNCTION caseway_chain_head(chain_id text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(730522, hashtext(chain_id));
    RETURN (SELECT hash FROM activity WHERE chain = chain_id ORDER BY seq DESC LIMIT 1);
END
$$
"""
_FIRST_SIZE = 100_000  # the next partition's entries; engine/history/partitions.py sizes the later ones


def upgrade() -> None:
    # Re-runnable after a failure in its last transaction (step 2): step 1 commits what precedes
    # it, so a second run finds the anchors' table and the CHECK of the first (its bound made
    # again here, from the seqs handed out since).
    if not sa.inspect(op.get_bind()).has_table("archived_chain"):
        _anchors_table()
    if op.get_bind().dialect.name != "postgresql":
        return
    next_seq = op.get_bind().scalar(
        sa.text("SELECT last_value + CASE WHEN is_called THEN 1 ELSE 0 END FROM activity_seq_seq")
    )
    # Room for the entries written while the table is read (step 1): a minute of a busy server
    # is a few thousand; reading 100M entries takes a few minutes.
    bound = next_seq + 1_000 + (next_seq - 1) // 100
    with op.get_context().autocommit_block():
        op.execute(f"ALTER TABLE activity DROP CONSTRAINT IF EXISTS {_FIRST}_bound")
        op.execute(f"ALTER TABLE activity ADD CONSTRAINT {_FIRST}_bound CHECK (seq < {bound}) NOT VALID")
        op.execute(f"ALTER TABLE activity VALIDATE CONSTRAINT {_FIRST}_bound")
    _partitioned(bound)


def _anchors_table() -> None:
    op.create_table(
        "archived_chain",
        sa.Column("chain", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("project_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("subproject_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("workflow_item_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("seq", _SEQ, nullable=False),
        sa.Column("hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("entries", _SEQ, nullable=False),
        sa.Column("archived_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("chain"),
    )
    op.create_index("ix_archived_chain_project", "archived_chain", ["project_id"])
    op.create_index("ix_archived_chain_subproject", "archived_chain", ["subproject_id"])
    op.create_index("ix_archived_chain_item", "archived_chain", ["workflow_item_id"])


def _partitioned(bound: int) -> None:
    """Step 2, in the migration's transaction: a failure here changes nothing of it."""
    op.execute(f"ALTER TABLE activity RENAME TO {_FIRST}")
    op.execute(f"ALTER TABLE {_FIRST} RENAME CONSTRAINT activity_pkey TO {_FIRST}_pkey")
    op.execute(f"ALTER TABLE {_FIRST} RENAME CONSTRAINT activity_id_key TO {_FIRST}_id_key")
    for name in _INDEXES:
        op.execute(f"ALTER INDEX {name} RENAME TO {name.replace('ix_activity', _FIRST)}")
    op.execute(f"CREATE TABLE activity (LIKE {_FIRST} INCLUDING DEFAULTS) PARTITION BY RANGE (seq)")
    op.execute("ALTER TABLE activity ADD CONSTRAINT activity_pkey PRIMARY KEY (seq)")
    for name, columns in _INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON activity ({columns})")
    op.execute("ALTER SEQUENCE activity_seq_seq OWNED BY activity.seq")
    op.execute(f"ALTER TABLE {_FIRST} ALTER COLUMN seq DROP DEFAULT")
    op.execute(f"ALTER TABLE activity ATTACH PARTITION {_FIRST} FOR VALUES FROM (MINVALUE) TO ({bound})")
    op.execute(f"ALTER TABLE {_FIRST} DROP CONSTRAINT {_FIRST}_bound")  # the partition's bound says it now
    _partition("activity_part_0001", f"FOR VALUES FROM ({bound}) TO ({bound + _FIRST_SIZE})")
    _partition("activity_default", "DEFAULT")
    op.execute(_HEAD)


def _partition(name: str, bounds: str) -> None:
    op.execute(f"CREATE TABLE {name} PARTITION OF activity {bounds}")
    op.execute(f"ALTER TABLE {name} ADD CONSTRAINT {name}_id_key UNIQUE (id)")


def downgrade() -> None:
    # Back to one table: every entry still here is copied (at 1M entries, 103 s under the lock
    # on a busy 2-core machine). Entries archived are not brought back: the first entry left of each archived
    # chain then names a previous hash the log lacks, and verify-history of the old code reports
    # the chain broken there (the archive and its anchors say why).
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_HEAD_BEFORE)
        op.execute("LOCK TABLE activity IN EXCLUSIVE MODE")  # no entry written after the copy's snapshot
        op.execute("CREATE TABLE activity_whole (LIKE activity INCLUDING DEFAULTS)")
        op.execute("INSERT INTO activity_whole SELECT * FROM activity ORDER BY seq")
        op.execute("ALTER SEQUENCE activity_seq_seq OWNED BY activity_whole.seq")
        op.execute("DROP TABLE activity")  # and its partitions
        op.execute("ALTER TABLE activity_whole RENAME TO activity")
        op.execute("ALTER TABLE activity ADD CONSTRAINT activity_pkey PRIMARY KEY (seq)")
        op.execute("ALTER TABLE activity ADD CONSTRAINT activity_id_key UNIQUE (id)")
        for name, columns in _INDEXES.items():
            op.execute(f"CREATE INDEX {name} ON activity ({columns})")
    op.drop_index("ix_archived_chain_item", table_name="archived_chain")
    op.drop_index("ix_archived_chain_subproject", table_name="archived_chain")
    op.drop_index("ix_archived_chain_project", table_name="archived_chain")
    op.drop_table("archived_chain")
