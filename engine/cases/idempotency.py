"""Idempotency keys of ``executeAction``: a client that sends the same request twice with one
key (a retry after a lost answer) gets the first answer again, and the action runs once; the
same key with a different request is refused.
"""

import hashlib
import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.people.actors import Actor
from models import Idempotency
from models.db import insert_for

__all__ = ["claim_key", "request_hash"]


def request_hash(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


async def claim_key(
    session: AsyncSession, *, actor: Actor, operation: str, key: str, req_hash: str
) -> Idempotency | None:
    """Claim the key, or return the earlier use of it. On PostgreSQL a concurrent claimer waits
    on the unique key until the first transaction commits (then sees its row) or rolls back."""
    insert = insert_for(session)
    claimed = await session.execute(
        insert(Idempotency)
        .values(
            actor_id=actor.user_id,
            operation=operation,
            key=key,
            request_hash=req_hash,
            response={},
            created_at=SYSTEM_CLOCK.now(),
        )
        .on_conflict_do_nothing()
        .returning(Idempotency.key)
    )
    if claimed.first() is not None:
        return None
    previous = await session.get(Idempotency, (actor.user_id, operation, key), populate_existing=True)
    assert previous is not None
    if previous.request_hash != req_hash:
        raise DomainError(
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            "This idempotency key was already used for a different request.",
            ["idempotencyKey"],
        )
    return previous
