"""Benchmark data: N projects x M subprojects x K workflow items, each with its case, role
assignees and history, written through the engine (so the data is exactly what the server
itself would have written).

    python -m bench.seed --size small|medium|large [--database-url URL]

small = 1 x 10 x 20, medium = 50 x 10 x 20 (10k items), large = 500 x 40 x 50 (1M items,
PostgreSQL only, written with COPY by bench/bulk.py at about 2,600 items/s here, so ~7 minutes;
`--bulk` does that for any size). Through the engine it is about 40 items/s. A bulk seed
then adds what bench R5's list pages read besides the items (bench/pages_seed.py: users,
comments, notifications, jobs, a tag, an ordering).
"""

import argparse
import asyncio
import sys
import time
from typing import Any

from sqlalchemy import func, select

import engine
from engine.cases import task_index
from engine.people import identity, permissions
from engine.spec import workflows
from models import Database, Project, Subproject, User, WorkflowItem
from server.migrate import upgrade

# projects x subprojects x items per subproject; "wide" is one subproject of 20,000 items (R4)
SIZES = {"small": (1, 10, 20), "medium": (50, 10, 20), "large": (500, 40, 50), "wide": (1, 1, 20_000)}
PASSWORD = "bench-password"


class Progress:
    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()

    def step(self, n: int = 1) -> None:
        self.done += n
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed else 0
        width = 30
        filled = int(width * self.done / self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} items  {rate:,.0f}/s")
        sys.stderr.flush()
        if self.done >= self.total:
            sys.stderr.write("\n")


async def seed(url: str, projects: int, subprojects: int, items: int, *, bulk: bool = False) -> dict[str, str]:
    """Create the data; returns the logins and ids the load drivers need. ``bulk`` writes the
    same rows with COPY instead of through the engine (PostgreSQL only; see bench/bulk.py)."""
    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    async with db.transaction() as s:
        await workflows.sync_spec_files(s, workflows.BUILTIN_DIR)
        owner = await s.scalar(select(User).where(User.login == "bench"))
        if owner is None:
            owner = await identity.create_user(s, actor=None, login="bench", password=PASSWORD, admin=False)
            dev = await identity.create_user(s, actor=None, login="bench-dev", password=PASSWORD)
        else:
            dev = await s.scalar(select(User).where(User.login == "bench-dev"))
    actor = engine.Actor(user_id=owner.id, login="bench", party_ids=frozenset({owner.id}))
    progress = Progress(projects * subprojects * items)
    first_project = None
    if bulk:
        from bench.bulk import seed_bulk

        async with db.session() as s:
            workflow = await workflows.latest_workflow(s, short_name="bug")
        dsn = db.url.replace("postgresql+asyncpg://", "postgresql://")
        await seed_bulk(
            dsn,
            owner=owner.id,
            dev=dev.id,
            workflow_id=workflow.id,
            projects=projects,
            subprojects=subprojects,
            items=items,
            progress=progress,
        )
        async with db.transaction() as s:
            await task_index.rebuild(s)  # COPY bypassed the engine, which keeps the task index
        projects = 0
    for p in range(projects):
        async with db.transaction() as s:
            project = await engine.create_project(s, actor=actor, display_name=f"Project {p}", tags=["bench"])
            await permissions.grant_raw(s, resource_id=project.id, intent="project.view", party_id=dev.id)
        first_project = first_project or project.id
        for m in range(subprojects):
            async with db.transaction() as s:
                sub = await engine.create_subproject(
                    s,
                    actor=actor,
                    project_id=project.id,
                    display_name=f"Subproject {p}.{m}",
                    currency="EUR",
                    workflow="bug",
                    assignee_id=dev.id,
                )
                for k in range(items):
                    await engine.create_workflow_item(
                        s,
                        actor=actor,
                        subproject_id=sub.id,
                        display_name=f"Item {p}.{m}.{k}",
                        assignee_id=dev.id,
                        amount_type="ALLOCATED",
                        amount=f"{100 + k}.50",
                    )
            progress.step(items)
    async with db.session() as s:
        total = await s.scalar(select(func.count()).select_from(WorkflowItem))
    await db.dispose()
    return {"owner": owner.id, "dev": dev.id, "first_project": first_project or "", "items": str(total)}


async def driver_data(url: str) -> dict[str, Any]:
    """What the load drivers need from a seeded database: a token of the bench user, the
    project ids, up to 5,000 item ids, each project's cursor for R2's second page, and the
    largest subproject with the item at its middle (R4's cursor)."""
    db = Database(url)
    async with db.transaction() as s:
        owner = await s.scalar(select(User).where(User.login == "bench"))
        token = await identity.create_token(s, user_id=owner.id, ttl_seconds=24 * 3600)
        projects = list((await s.scalars(select(Project.id).order_by(Project.id))).all())
        items = list((await s.scalars(select(WorkflowItem.id).order_by(WorkflowItem.id).limit(5000))).all())
        fifth = {}
        for project in projects:  # the cursor after each project's 5th subproject (R2's second page)
            ids = (
                await s.scalars(
                    select(Subproject.id).where(Subproject.project_id == project).order_by(Subproject.id).limit(5)
                )
            ).all()
            fifth[project] = ids[-1] if len(ids) == 5 else None
        widest, size = (
            await s.execute(
                select(WorkflowItem.subproject_id, func.count())
                .group_by(WorkflowItem.subproject_id)
                .order_by(func.count().desc(), WorkflowItem.subproject_id)
                .limit(1)
            )
        ).one()
        middle = await s.scalar(
            select(WorkflowItem.id)
            .where(WorkflowItem.subproject_id == widest)
            .order_by(WorkflowItem.id)
            .offset(size // 2)
            .limit(1)
        )
    await db.dispose()
    return {
        "token": token,
        "owner": owner.id,
        "projects": projects,
        "items": items,
        "fifth": fifth,
        "widest": {"subproject": widest, "middle": middle},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=SIZES, default="small")
    parser.add_argument("--database-url", default="sqlite:///./bench.db")
    parser.add_argument("--bulk", action="store_true", help="COPY instead of the engine (default for large)")
    args = parser.parse_args()
    bulk = args.bulk or args.size == "large"
    if bulk and not args.database_url.startswith("postgres"):
        parser.error("bulk seeding (and the large size) is for PostgreSQL")
    result = asyncio.run(seed(args.database_url, *SIZES[args.size], bulk=bulk))
    print(f"seeded: {result['items']} workflow items in total")
    if bulk:  # what bench R5's list pages read besides the items
        from bench.pages_seed import seed_pages

        extras = asyncio.run(seed_pages(args.database_url, owner=result["owner"], password=PASSWORD))
        print(f"and for the list pages: {extras}")


if __name__ == "__main__":
    main()
