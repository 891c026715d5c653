"""SQL statements per GraphQL request, counted in-process against the same database."""

from typing import Any

import httpx
from sqlalchemy import event

from models import Database
from server.app import create_app
from server.settings import Settings


async def count(database_url: str, token: str, body: dict[str, Any]) -> int:
    db = Database(database_url)
    app = create_app(Settings(database_url=database_url), db=db)
    counter = {"n": 0}

    def on_execute(*_: Any) -> None:
        counter["n"] += 1

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        headers = {"Authorization": f"Bearer {token}"}
        await client.post("/graphql", json=body, headers=headers)  # warm caches (specs, statements)
        event.listen(db.engine.sync_engine, "before_cursor_execute", on_execute)
        response = await client.post("/graphql", json=body, headers=headers)
        event.remove(db.engine.sync_engine, "before_cursor_execute", on_execute)
    assert not response.json().get("errors"), response.text
    await db.dispose()
    return counter["n"]
