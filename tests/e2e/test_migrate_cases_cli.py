"""`caseway migrate-cases` as an operator runs it, on a database of the test backend: a dry run says where each case
would land and changes nothing, the real run goes through every batch (more cases than a batch
takes), prints each case and the totals, and exits 1 when a case or the request is refused."""

import asyncio
import os

import pytest
from sqlalchemy import func, select

import engine
from engine.people import identity
from models import Activity, Case, Database, Subproject, Workflow
from server.migrate import upgrade
from tests.fixtures.builders import caseway
from tests.fixtures.database import own_database
from tests.fixtures.versions import PERMIT_V1, permit_v2

DRAFTS = 3  # with the two submitted, five cases: three batches of two
ROLES = {"clerk": {"callbacks": ["creation_user"]}, "reviewer": {"callbacks": ["creation_user"]}}


async def permits(url):
    """permit v1 with DRAFTS cases in `draft` and two in `review`, then permit v2 defined; the
    subproject's id and the submitted cases' ids."""
    db = Database(url)
    try:
        async with db.transaction() as s:
            user = await identity.create_user(s, actor=None, login="root", password="long-enough-pw", admin=True)
            root = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            await engine.define_workflow(s, actor=None, spec=PERMIT_V1 | {"roles": ROLES})
            project = await engine.create_project(s, actor=root, display_name="Permits")
            sub = await engine.create_subproject(
                s, actor=root, project_id=project.id, display_name="Town", currency="EUR", workflow="permit"
            )
            submitted = []
            for n in range(DRAFTS + 2):
                _, case = await engine.create_workflow_item(s, actor=root, subproject_id=sub.id, display_name=f"P{n}")
                if n >= DRAFTS:
                    await engine.execute(s, actor=root, action="submit", case_id=case.id)
                    submitted.append(case.id)
            await engine.define_workflow(s, actor=None, spec=permit_v2() | {"roles": ROLES})
        return sub.id, submitted
    finally:
        await db.dispose()


async def on_versions(url):
    db = Database(url)
    try:
        async with db.session() as s:
            cases = dict(
                (
                    await s.execute(
                        select(Workflow.version, func.count())
                        .join(Case, Case.workflow_id == Workflow.id)
                        .group_by(Workflow.version)
                    )
                ).all()
            )
            logged = await s.scalar(select(func.count()).where(Activity.kind == "case_migrated"))
            subproject = await s.scalar(
                select(Workflow.version).join(Subproject, Subproject.workflow_id == Workflow.id)
            )
        return cases, logged, subproject
    finally:
        await db.dispose()


@pytest.fixture
async def url(tmp_path):
    async with own_database("caseway_cli_cases", tmp_path) as made:
        yield made


async def test_migrate_cases_dry_run_then_every_batch_then_nothing_left(url):
    env = {**os.environ, "CASEWAY_DATABASE_URL": url}
    await asyncio.to_thread(upgrade, url)
    sub, (first, second) = await permits(url)
    base = ["migrate-cases", "--workflow", "permit", "--to-version", "2", "--subproject", sub, "--batch-size", "2"]

    dry = caseway(*base, "--dry-run", env=env)
    assert dry.returncode == 1, dry.stderr  # the submitted cases are in `review`, which v2 lacks
    lines = dry.stdout.splitlines()
    assert (
        len(lines) == DRAFTS + 3
        and lines.count(
            f"{first}: refused: STATE_NOT_MAPPED The case is in 'review', which version 2 lacks; map it in stateMap."
        )
        == 1
    )
    assert sum(line.endswith(": draft -> draft (dry run)") for line in lines) == DRAFTS
    assert lines[-1] == f"Dry run: {DRAFTS} cases would move to version 2 of 'permit', 2 refused (3 batches)."
    assert await on_versions(url) == ({1: DRAFTS + 2}, 0, 1)  # nothing changed

    done = caseway(*base, "--map", "review=checking", "--timer-policy", "RESTART", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"{second}: review -> checking" in lines
    assert lines[-1] == f"{DRAFTS + 2} cases moved to version 2 of 'permit', 0 refused (3 batches)."
    assert await on_versions(url) == ({2: DRAFTS + 2}, DRAFTS + 2, 2)

    again = caseway(*base, "--map", "review=checking", env=env)  # resumed: nothing is left
    assert (again.returncode, again.stdout) == (0, "0 cases moved to version 2 of 'permit', 0 refused (1 batches).\n")


async def test_cases_by_id_and_refused_requests(url):
    env = {**os.environ, "CASEWAY_DATABASE_URL": url}
    await asyncio.to_thread(upgrade, url)
    _, (first, _) = await permits(url)
    base = ["migrate-cases", "--workflow", "permit", "--to-version", "2", "--map", "review=checking"]

    some = caseway(*base, "--case", first, "--case", "case_nope", env=env)
    assert some.returncode == 1
    assert some.stdout.splitlines() == [
        f"{first}: review -> checking",
        "case_nope: refused: NOT_FOUND No case with id 'case_nope' exists.",
        "1 cases moved to version 2 of 'permit', 1 refused (1 batches).",
    ]
    unknown = caseway(*base[:4], "9", "--case", first, env=env)
    assert unknown.returncode == 1 and unknown.stderr.startswith("error: ") and "Traceback" not in unknown.stderr
    assert "version" in unknown.stderr.lower()
    bad_map = caseway(*base[:6], "review", "--case", first, env=env)
    assert bad_map.returncode == 1
    assert (
        bad_map.stderr
        == "error: --map takes FROM=TO (a state of the cases' version, then one of the new), not 'review'.\n"
    )
    too_big = caseway(*base, "--case", first, "--batch-size", "501", env=env)
    assert (too_big.returncode, too_big.stderr) == (1, "error: --batch-size is 1 to 500, not 501.\n")
    neither = caseway(*base, env=env)
    assert neither.returncode == 2 and "one of the arguments --subproject --case is required" in neither.stderr
