"""activity hashes cover every column; history_checkpoint found by seq

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 15:00:00

Until now an entry's hash left out ``seq``, ``case_id`` and ``chain``, so moving an entry to
another case went unnoticed. The new hash is ``sha256(f"{seq}:{digest}")``, where ``digest`` is
the SHA-256 of every other column and the previous hash (``engine/history/activity.py``). This rewrites
every chain under it, chain by chain in seq order, so existing databases verify; the downgrade
writes the old hashes back. A chain already broken is rewritten only up to its first broken
entry, so the upgrade never hides tampering that happened before it. The functions are copied here, not imported: a migration must keep
computing what it computed when it was written.

The index on ``history_checkpoint.seq`` lets each checkpoint pass find where the last one
stopped (``engine/history/history.py``) without reading every checkpoint.
"""

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

import models.types

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 5_000
_log = logging.getLogger('alembic.runtime.migration')

_activity = sa.table(
    'activity',
    sa.column('seq', sa.BigInteger()),
    sa.column('id', sa.String()),
    sa.column('project_id', sa.String()),
    sa.column('subproject_id', sa.String()),
    sa.column('workflow_item_id', sa.String()),
    sa.column('case_id', sa.String()),
    sa.column('kind', sa.String()),
    sa.column('action', sa.String()),
    sa.column('actor_id', sa.String()),
    sa.column('at', models.types.UTCDateTime(timezone=True)),
    sa.column('comment', sa.String()),
    sa.column('data', sa.JSON()),
    sa.column('chain', sa.String()),
    sa.column('prev_hash', sa.String()),
    sa.column('hash', sa.String()),
)


def _dumps(values: list[Any]) -> bytes:
    return json.dumps(values, sort_keys=True, separators=(',', ':'), default=str).encode()


def _every_column(prev_hash: str | None, e: Any) -> str:
    """engine/activity.entry_hash as of revision 0008."""
    digest = hashlib.sha256(
        _dumps(
            [
                prev_hash, e.id, e.kind, e.chain, e.project_id, e.subproject_id, e.workflow_item_id, e.case_id,
                e.action, e.actor_id, e.at.isoformat(), e.comment, e.data,
            ]
        )
    ).hexdigest()
    return hashlib.sha256(f'{e.seq}:{digest}'.encode()).hexdigest()


def _before_0008(prev_hash: str | None, e: Any) -> str:
    """engine/activity.entry_hash before revision 0008."""
    return hashlib.sha256(
        _dumps(
            [
                prev_hash, e.id, e.kind, e.actor_id, e.at.isoformat(), e.action, e.comment, e.data,
                e.project_id, e.subproject_id, e.workflow_item_id,
            ]
        )
    ).hexdigest()


def _rehash(entry_hash: Callable[[str | None, Any], str], stored_as: Callable[[str | None, Any], str]) -> None:
    """Every chain in seq order, read in pages by (chain, seq): memory stays bounded however
    long the log is. A chain is rewritten only as far as it verifies under the scheme it was
    stored with (``stored_as``): from its first broken entry on it is left as it is, so the
    tampering stays visible, reported at that entry, instead of being sealed under new hashes."""
    bind = op.get_bind()
    update = (
        sa.update(_activity)
        .where(_activity.c.seq == sa.bindparam('b_seq'))
        .values(prev_hash=sa.bindparam('b_prev'), hash=sa.bindparam('b_hash'))
    )
    chain, prev, stored_prev, broken, after_seq = None, None, None, False, -1
    while True:
        page = (
            sa.select(_activity)
            .order_by(_activity.c.chain, _activity.c.seq)
            .limit(_BATCH)
        )
        if chain is not None:
            # a row comparison: an index range (ix_activity_chain_seq), page after page
            page = page.where(sa.tuple_(_activity.c.chain, _activity.c.seq) > sa.tuple_(chain, after_seq))
        rows = bind.execute(page).all()
        if not rows:
            return
        changes = []
        for row in rows:
            if row.chain != chain:
                chain, prev, stored_prev, broken = row.chain, None, None, False
            after_seq = row.seq
            if broken:
                continue
            if row.prev_hash != stored_prev or row.hash != stored_as(stored_prev, row):
                broken = True
                _log.warning('activity chain %s is broken at seq %s: left as it is', chain, row.seq)
                continue
            new = entry_hash(prev, row)
            if row.prev_hash != prev or row.hash != new:
                changes.append({'b_seq': row.seq, 'b_prev': prev, 'b_hash': new})
            prev, stored_prev = new, row.hash
        if changes:
            bind.execute(update, changes)


def upgrade() -> None:
    _rehash(_every_column, stored_as=_before_0008)
    with op.batch_alter_table('history_checkpoint', schema=None) as batch_op:
        batch_op.create_index('ix_history_checkpoint_seq', ['seq'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('history_checkpoint', schema=None) as batch_op:
        batch_op.drop_index('ix_history_checkpoint_seq')
    op.execute(sa.text('DELETE FROM history_checkpoint'))  # they sign hashes of the new scheme
    _rehash(_before_0008, stored_as=_every_column)
