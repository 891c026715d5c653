"""M1: cases migrated per second. 10,000 running cases of a two-step workflow on PostgreSQL
(each in `review`, with two assigned actions, a role player and a running timer) move to version 2,
which renames `review` and one action and lengthens the timer: first a dry run over all of them,
then the real run, each as ``migrateCases`` runs it (``engine.migration.migration.migrate_cases``, one
transaction per call of ``MAX_CASES`` cases, the cursor going on), timed from the first call to the
last commit. Budget (the project's goal): ≥ 1,000 cases/s for either.

    python -m bench.migration [--cases 10000] [--report bench/REPORT.md | --no-report]

The cases are bulk-loaded with COPY (bench/bulk.py: the rows and hash-chained entries the engine
writes for such a case). After the real run every case must be on version 2 in `checking` with one
`case_migrated` entry, which the scenario checks.
"""

import argparse
import asyncio
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

import engine
from bench import sections
from bench.bulk import Batch, add_item_and_case
from bench.server import drop_postgres, fresh_postgres
from engine.migration import migration
from engine.people import identity
from engine.people.actors import Actor
from models import Database, new_id
from server.migrate import upgrade

BEGIN, END = "<!-- M1 -->", "<!-- /M1 -->"
CASES = 10_000
BUDGET = 1_000.0  # cases/s, the project's goal
HOUR = 3600

V1 = {
    "short_name": "bench_permit",
    "roles": {"clerk": {"callbacks": ["creation_user"]}, "reviewer": {}},
    "states": {"review": {}, "approved": {"terminal": True}, "rejected": {"terminal": True}},
    "actions": {
        "open": {"trigger": "init", "new_state": "review"},
        "decide": {"assigned_role": "reviewer", "assigned_states": ["review"], "new_state": "approved"},
        "reject": {"assigned_role": "reviewer", "assigned_states": ["review"], "new_state": "rejected"},
        "expire": {
            "trigger": "time",
            "enabled_states": ["review"],
            "timeout_seconds": 2 * HOUR,
            "new_state": "rejected",
        },
    },
}
V2 = {
    **V1,
    "states": {"checking": {}, "approved": {"terminal": True}, "rejected": {"terminal": True}},
    "actions": {
        "open": {"trigger": "init", "new_state": "checking"},
        "approve": {"assigned_role": "reviewer", "assigned_states": ["checking"], "new_state": "approved"},
        "reject": {"assigned_role": "reviewer", "assigned_states": ["checking"], "new_state": "rejected"},
        "expire": {
            "trigger": "time",
            "enabled_states": ["checking"],
            "timeout_seconds": 4 * HOUR,
            "new_state": "rejected",
        },
    },
}


@dataclass
class Run:
    cases: int
    seconds: float
    calls: int
    moved: int
    cpu: float  # seconds of this process's CPU (the engine, SQLAlchemy, the driver), the database's not

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


async def _setup(db: Database) -> tuple[Actor, str, str, str]:
    async with db.transaction() as s:
        user = await identity.create_user(s, actor=None, login="m1-admin", password=new_id("pw"), admin=True)
        admin = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
        workflow = await engine.define_workflow(s, actor=None, spec=V1)
        project = await engine.create_project(s, actor=admin, display_name="M1")
        sub = await engine.create_subproject(
            s, actor=admin, project_id=project.id, display_name="M1", currency="EUR", workflow=V1["short_name"]
        )
    return admin, workflow.id, project.id, sub.id


async def _load(url: str, *, owner: str, workflow_id: str, project: str, sub: str, cases: int) -> None:
    """``cases`` items in `review`: their decide and reject enabled for the reviewer (the owner),
    and the expiry timer running."""
    now = datetime.now(UTC)
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for start in range(0, cases, 1000):
            batch = Batch()
            for i in range(start, min(start + 1000, cases)):
                _, case, _ = add_item_and_case(
                    batch,
                    project=project,
                    sub=sub,
                    owner=owner,
                    assignee=owner,
                    workflow_id=workflow_id,
                    name=f"M{i}",
                    at=now,
                    init_action="open",
                    state="review",
                )
                for role in ("clerk", "reviewer"):
                    batch.add("case_role_party", case_id=case, role=role, party_id=owner)
                for action, trigger, role in (("decide", "user", "reviewer"), ("reject", "user", "reviewer")):
                    batch.add(
                        "enabled_action",
                        id=new_id("ea"),
                        case_id=case,
                        action=action,
                        scope="",
                        trigger=trigger,
                        assigned_role=role,
                        status="ENABLED",
                        enabled_at=now,
                    )
                batch.add(
                    "enabled_action",
                    id=new_id("ea"),
                    case_id=case,
                    action="expire",
                    scope="",
                    trigger="time",
                    status="ENABLED",
                    enabled_at=now,
                    fire_at=now + timedelta(hours=2),
                )
            await batch.copy(conn)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def _migrate(db: Database, admin: Actor, sub: str, *, dry_run: bool) -> Run:
    """Every case of the subproject, ``MAX_CASES`` per transaction, as migrateCases runs them."""
    after, calls, moved, seen = None, 0, 0, 0
    started, cpu = time.perf_counter(), time.process_time()
    while True:
        # A dry run writes nothing: a session closed without a commit, as migrateCases rolls it back.
        async with db.session() if dry_run else db.transaction() as s:
            result = await migration.migrate_cases(
                s,
                actor=admin,
                workflow=V1["short_name"],
                to_version=2,
                state_map=[("review", "checking")],
                subproject_id=sub,
                dry_run=dry_run,
                after=after,
            )
        calls += 1
        moved += result.migrated
        seen += len(result.results)
        if result.refused:
            raise AssertionError(f"{result.refused} cases refused: {result.results[0].errors}")
        if not result.has_more:
            break
        after = result.end_cursor
    return Run(
        cases=seen, seconds=time.perf_counter() - started, calls=calls, moved=moved, cpu=time.process_time() - cpu
    )


async def _check(url: str, cases: int) -> list[str]:
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        on_v2 = await conn.fetchval(
            "SELECT count(*) FROM workflow_case c JOIN workflow w ON w.id = c.workflow_id "
            "JOIN case_state s ON s.case_id = c.id AND s.scope = '' WHERE w.version = 2 AND s.state = 'checking'"
        )
        logged = await conn.fetchval("SELECT count(*) FROM activity WHERE kind = 'case_migrated'")
        tasks = await conn.fetchval(
            "SELECT count(*) FROM task_assignment t JOIN enabled_action e ON e.id = t.enabled_action_id "
            "WHERE e.action = 'approve'"
        )
    finally:
        await conn.close()
    return [
        f"{what}: {found:,} of {cases:,}"
        for what, found in (("on version 2", on_v2), ("case_migrated entries", logged), ("approve tasks", tasks))
        if found != cases
    ]


async def scenario(cases: int) -> tuple[Run, Run, list[str], float]:
    url, name = await fresh_postgres("caseway_m1")
    try:
        await asyncio.to_thread(upgrade, url)
        db = Database(url)
        try:
            admin, workflow_id, project, sub = await _setup(db)
            await _load(url, owner=admin.user_id, workflow_id=workflow_id, project=project, sub=sub, cases=cases)
            async with db.transaction() as s:
                await engine.define_workflow(s, actor=None, spec=V2)
            load = os.getloadavg()[0]
            dry = await _migrate(db, admin, sub, dry_run=True)
            real = await _migrate(db, admin, sub, dry_run=False)
        finally:
            await db.dispose()
        return dry, real, await _check(url, cases), load
    finally:
        await drop_postgres(name)


def _bound(run: Run) -> str:
    return f"{run.cases / run.cpu:,.0f}" if run.cpu else "-"


def section(dry: Run, real: Run, problems: list[str], load: float) -> list[str]:
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    rows = [
        "| run | cases | calls | seconds | cases/s | CPU of this process per case | verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, run, extra in (("dry run", dry, []), ("real run", real, problems)):
        verdict = sections.verdict(extra + ([f"{run.rate:,.0f} cases/s < {BUDGET:,.0f}"] if run.rate < BUDGET else []))
        per_case = 1000 * run.cpu / max(run.cases, 1)
        measured = f"{run.cases:,} | {run.calls} | {run.seconds:.2f} | {run.rate:,.0f} | {per_case:.2f} ms"
        rows.append(f"| {label} | {measured} | {verdict} |")
    return [
        BEGIN,
        "",
        f"## M1: running cases migrated to a new version (`bench/migration.py`, {when}, at `{sections.commit()}`)",
        "",
        f"{real.cases:,} running cases on PostgreSQL (bulk-loaded with COPY: each in `review` with two assigned "
        "actions, a role player and a running timer) moved to version 2 (a state and an action renamed, the "
        f"timer lengthened; `timerPolicy` KEEP) through `migrate_cases`, {migration.MAX_CASES} "
        "cases per call and transaction, the cursor going on, in one process; the dry run first (each call "
        "rolled back), then the real run. Checked after it: every case on version 2 in `checking`, one "
        "`case_migrated` entry each, the reviewer's `approve` tasks in the task index. Budget (the project's "
        f"goal): ≥ {BUDGET:,.0f} cases/s for either. Load average {load:.1f} on {os.cpu_count()} cores when it "
        "started (the machine is shared: the rate is what this run got of it). The CPU this process spent per "
        "case (the engine, SQLAlchemy, the driver; PostgreSQL's not counted) bounds what it could reach with "
        f"the cores to itself: {_bound(dry)} cases/s for the dry run, {_bound(real)} for the real run.",
        "",
        *rows,
        "",
        END,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=CASES)
    sections.add_arguments(parser)
    args = parser.parse_args()
    dry, real, problems, load = asyncio.run(scenario(args.cases))
    sections.publish(
        section(dry, real, problems, load),
        args,
        name="M1",
        write=lambda report, lines: sections.replace(report, lines, begin=BEGIN, end=END),
    )


if __name__ == "__main__":
    main()
