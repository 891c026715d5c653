"""Getting a database ready: migrate, define the workflows, load the demo data."""

from sqlalchemy import func, select

import engine
from engine.people import identity, permissions
from engine.spec import workflows
from models import Database, User
from server.migrate import upgrade
from server.settings import Settings

DEMO_PASSWORD = "caseway-demo"


async def prepare(settings: Settings, db: Database) -> None:
    """Apply pending migrations, then define built-in and configured workflow specs that changed."""
    import asyncio

    await asyncio.to_thread(upgrade, db.direct_url or db.url)  # a session of its own: not through a pooler
    async with db.transaction() as session:
        await workflows.sync_spec_files(session, workflows.BUILTIN_DIR)
        if settings.workflows_dir is not None:
            await workflows.sync_spec_files(session, settings.workflows_dir)


DEMO_USERS = {  # login: (display name, admin)
    "admin": ("Ada Admin", True),
    "alice": ("Alice Analyst", False),
    "bob": ("Bob Builder", False),
    "carol": ("Carol Controller", False),
}


async def add_demo_users(db: Database) -> list[str]:
    """On a database that has users already: create the demo users it lacks (so that `serve
    --demo` can print the admin's token), and no projects. Returns the logins created."""
    async with db.transaction() as s:
        existing = set((await s.scalars(select(User.login).where(User.login.in_(DEMO_USERS)))).all())
        for login, (name, admin) in DEMO_USERS.items():
            if login not in existing:
                await identity.create_user(
                    s, actor=None, login=login, password=DEMO_PASSWORD, display_name=name, admin=admin
                )
    return [login for login in DEMO_USERS if login not in existing]


async def load_demo(db: Database) -> bool:
    """Fill an empty database with a few users, a group, two projects and their items.
    Returns False (and does nothing) if there are users already."""
    async with db.transaction() as s:
        if await s.scalar(select(func.count()).select_from(User)):
            return False
        admin = await identity.create_user(
            s, actor=None, login="admin", password=DEMO_PASSWORD, display_name="Ada Admin", admin=True
        )
        users = {}
        for login, name in (("alice", "Alice Analyst"), ("bob", "Bob Builder"), ("carol", "Carol Controller")):
            users[login] = await identity.create_user(
                s, actor=None, login=login, password=DEMO_PASSWORD, display_name=name, organization="Caseway Demo"
            )
        a = await identity.actor_for(s, user_id=admin.id, login=admin.login, is_admin=True)
        reviewers = await identity.create_group(s, actor=a, name="reviewers", display_name="Reviewers")
        await identity.add_group_member(s, actor=a, group_id=reviewers.id, user_id=users["carol"].id)
        alice = await identity.actor_for(s, user_id=users["alice"].id, login="alice", is_admin=False)
        school = await engine.create_project(
            s,
            actor=alice,
            display_name="School renovation",
            description="Roof, windows and a new library.",
            tags=["education"],
            projected_budgets=[engine.BudgetInput("City of Springfield", "EUR", "250000")],
        )
        roof = await engine.create_subproject(
            s,
            actor=alice,
            project_id=school.id,
            display_name="Roof",
            currency="EUR",
            validator_id=users["carol"].id,
            workflow="approval",
        )
        for name, amount in (("Scaffolding", "12000"), ("Tiles", "48000.50"), ("Labour", "30000")):
            await engine.create_workflow_item(
                s, actor=alice, subproject_id=roof.id, display_name=name, amount_type="ALLOCATED", amount=amount
            )
        windows = await engine.create_subproject(
            s,
            actor=alice,
            project_id=school.id,
            display_name="Windows",
            currency="EUR",
            assignee_id=users["bob"].id,
            workflow_mode="ORDERED",
        )
        for name in ("Measure", "Order", "Install"):
            await engine.create_workflow_item(
                s, actor=alice, subproject_id=windows.id, display_name=name, assignee_id=users["bob"].id
            )
        it = await engine.create_project(s, actor=alice, display_name="Intranet", tags=["it"])
        bugs = await engine.create_subproject(
            s,
            actor=alice,
            project_id=it.id,
            display_name="Bugs",
            currency="USD",
            assignee_id=users["bob"].id,
            workflow="bug",
        )
        for name in ("Login page is slow", "Typo on the home page"):
            await engine.create_workflow_item(s, actor=alice, subproject_id=bugs.id, display_name=name)
        for resource in (school.id, roof.id, windows.id, it.id, bugs.id):
            prefix = permissions.intent_prefix(resource)
            for party in (users["bob"].id, reviewers.id):
                await permissions.grant_raw(s, resource_id=resource, intent=f"{prefix}.view", party_id=party)
    return True


async def demo_token(db: Database, settings: Settings, login: str = "admin") -> str:
    async with db.transaction() as s:
        user = await s.scalar(select(User).where(User.login == login))
        if user is None:
            raise SystemExit(f"No user {login!r}: run `caseway demo` first.")
        return await identity.create_token(s, user_id=user.id, ttl_seconds=settings.token_ttl)


__all__ = ["DEMO_PASSWORD", "DEMO_USERS", "add_demo_users", "demo_token", "load_demo", "prepare"]
