"""Bulk seeding for the `large` size (1M workflow items): the rows the engine would write for a
new `bug` item (item, case, state, three enabled actions, two role players, grants, and a
hash-chained history of three entries), generated in Python and loaded with PostgreSQL COPY.
`tests/test_bench_seed.py` checks that a bulk-seeded item reads exactly like an engine-made one."""

import json
import types
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from sqlmodel import SQLModel

from engine.history.activity import entry_hash
from engine.people.permissions import PROJECT_INTENTS, SUBPROJECT_INTENTS, WORKFLOW_ITEM_INTENTS
from models import new_id

_TABLES = (
    "project",
    "subproject",
    "workflow_item",
    "workflow_case",
    "case_state",
    "enabled_action",
    "case_role_party",
    "permission",
    "activity",
    "state_visit",
)


def _columns(table: str, rows: list[dict[str, Any]]) -> list[str]:
    """The columns to COPY: a column no row names and that has a server default is left to the
    database (``workflow_case.fields``: written as JSON null, the compiled reads' ``json_each``
    refused every case and answered through the resolvers, so R6 measured the fallback)."""
    table_ = SQLModel.metadata.tables[table]
    return [c.name for c in table_.columns if c.server_default is None or any(c.name in r for r in rows)]


def _json_columns(table: str) -> set[str]:
    return {c.name for c in SQLModel.metadata.tables[table].columns if c.type.__class__.__name__ == "JSON"}


class Batch:
    """Rows per table, and hash-chained log entries, gathered in Python and written with one COPY
    per table (``copy``): shared by the `large` seed and bench T1 (bench/timers.py)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in _TABLES}

    def add(self, table: str, **row: Any) -> None:
        if table == "permission":  # a seeded grant holds where it is made (engine/people/inheritance.py)
            row.setdefault("inherit", False)
        self.rows[table].append(row)

    def log(self, **row: Any) -> None:
        defaults = {
            "comment": None,
            "action": None,
            "project_id": None,
            "subproject_id": None,
            "workflow_item_id": None,
            "case_id": None,
        }
        # Hashed in ``copy``, once the entry has its seq (the hash covers it).
        self.add("activity", **{"id": new_id("act"), **defaults, **row})

    async def copy(self, conn: asyncpg.Connection, heads: dict[str, str | None] | None = None) -> None:
        """Write the rows; ``heads`` are the hashes that chains already in the database end
        with, for entries appended to them (bench/pages_seed.py's comments)."""
        entries = self.rows["activity"]
        # Seqs in the order the entries were logged, as the engine's inserts would take them.
        seqs = await conn.fetch(
            "SELECT nextval('activity_seq_seq') FROM generate_series(1, $1::int) ORDER BY 1", len(entries)
        )
        heads = dict(heads or {})
        for entry, record in zip(entries, seqs, strict=True):
            entry["seq"] = record[0]
            entry["prev_hash"] = heads.get(entry["chain"])
            entry["hash"] = heads[entry["chain"]] = entry_hash(entry["prev_hash"], types.SimpleNamespace(**entry))
        for table in _TABLES:
            columns, json_columns = _columns(table, self.rows[table]), _json_columns(table)
            records = [
                tuple(json.dumps(r.get(c)) if c in json_columns else r.get(c) for c in columns)
                for r in self.rows[table]
            ]
            if records:
                await conn.copy_records_to_table(table, records=records, columns=columns)
        self.rows = {t: [] for t in _TABLES}


async def seed_bulk(
    dsn: str, *, owner: str, dev: str, workflow_id: str, projects: int, subprojects: int, items: int, progress: Any
) -> None:
    conn = await asyncpg.connect(dsn)
    # One item a minute, the last one now (1M items: two years): history read by date (its
    # from/to filters) then selects a slice, as it would on a real server, not all or nothing.
    clock = datetime.now(UTC) - timedelta(minutes=projects * subprojects * items)
    try:
        for p in range(projects):
            batch = Batch()
            now = clock
            project = new_id("prj")
            batch.add(
                "project",
                id=project,
                display_name=f"Project {p}",
                description="",
                status="OPEN",
                assignee_id=owner,
                created_by=owner,
                created_at=now,
                tags=["bench"],
                additional_data={},
            )
            batch.log(
                chain=project,
                kind="project_created",
                actor_id=owner,
                at=now,
                project_id=project,
                data={"displayName": f"Project {p}"},
            )
            for intent in PROJECT_INTENTS:
                batch.add("permission", resource_id=project, intent=intent, party_id=owner)
            batch.add("permission", resource_id=project, intent="project.view", party_id=dev)
            for m in range(subprojects):
                now = clock
                sub = new_id("sub")
                batch.add(
                    "subproject",
                    id=sub,
                    project_id=project,
                    display_name=f"Subproject {p}.{m}",
                    description="",
                    status="OPEN",
                    assignee_id=dev,
                    created_by=owner,
                    created_at=now,
                    tags=[],
                    additional_data={},
                    currency="EUR",
                    validator_id=None,
                    workflow_mode="UNORDERED",
                    workflow_id=workflow_id,
                    workflow_item_ordering=[],
                )
                batch.log(
                    chain=sub,
                    kind="subproject_created",
                    actor_id=owner,
                    at=now,
                    project_id=project,
                    subproject_id=sub,
                    data={"displayName": f"Subproject {p}.{m}", "workflow": "bug"},
                )
                for intent in SUBPROJECT_INTENTS:
                    batch.add("permission", resource_id=sub, intent=intent, party_id=owner)
                batch.add("permission", resource_id=sub, intent="subproject.view", party_id=dev)
                for k in range(items):
                    _item(
                        batch,
                        project=project,
                        sub=sub,
                        owner=owner,
                        dev=dev,
                        workflow_id=workflow_id,
                        name=f"Item {p}.{m}.{k}",
                        amount=f"{100 + k}.50",
                        now=clock,
                    )
                    clock += timedelta(minutes=1)
                progress.step(items)
            await batch.copy(conn)
    finally:
        await conn.close()


def add_item_and_case(
    batch: Batch,
    *,
    project: str,
    sub: str,
    owner: str,
    assignee: str,
    workflow_id: str,
    name: str,
    at: datetime,
    init_action: str,
    state: str,
    amount_type: str = "N/A",
    amount: str | None = None,
    currency: str | None = None,
    exchange_rate: str | None = None,
) -> tuple[str, str, dict[str, str]]:
    """The rows `engine.create_workflow_item` writes for a new item and its case up to the init
    action: the item, the owner's grants on it, its case in ``state`` and two log entries. What a
    workflow enables next (actions, roles) differs by workflow and is the caller's to add; returns
    (item id, case id, the log scope of the item) for that."""
    item, case = new_id("wfi"), new_id("case")
    scope = {"project_id": project, "subproject_id": sub, "workflow_item_id": item}
    batch.add(
        "workflow_item",
        id=item,
        subproject_id=sub,
        project_id=project,
        display_name=name,
        description="",
        created_by=owner,
        created_at=at,
        assignee_id=assignee,
        amount_type=amount_type,
        amount=amount,
        currency=currency,
        exchange_rate=exchange_rate,
        tags=[],
        additional_data={},
    )
    for intent in WORKFLOW_ITEM_INTENTS:
        batch.add("permission", resource_id=item, intent=intent, party_id=owner)
    batch.log(
        chain=item,
        kind="workflow_item_created",
        actor_id=owner,
        at=at,
        **scope,
        data={
            "displayName": name,
            "amountType": amount_type,
            "amount": amount,
            "currency": currency,
            "assigneeId": assignee,
        },
    )
    batch.add(
        "workflow_case",
        id=case,
        workflow_id=workflow_id,
        object_id=item,
        status="ACTIVE",
        version=0,
        created_by=owner,
        created_at=at,
    )
    batch.add("case_state", case_id=case, scope="", state=state)
    batch.add(  # its first state visit, as engine/history/visits.py writes it
        "state_visit",
        id=new_id("vis"),
        case_id=case,
        subproject_id=sub,
        scope="",
        scope_action=None,
        state=state,
        workflow_id=workflow_id,
        entered_at=at,
        entered_action=init_action,
        left_at=None,
        left_action=None,
        left_reason=None,
        suspended_seconds=0.0,
        suspended_at=None,
    )
    batch.log(
        chain=item,
        kind="action_executed",
        actor_id=owner,
        at=at,
        case_id=case,
        action=init_action,
        data={"from": None, "to": state},
        **scope,
    )
    return item, case, scope


def _item(
    batch: Batch,
    *,
    project: str,
    sub: str,
    owner: str,
    dev: str,
    workflow_id: str,
    name: str,
    amount: str,
    now: datetime,
) -> None:
    """A `bug` item: opened, assigned to ``dev`` (who may view it), with its three user actions."""
    item, case, scope = add_item_and_case(
        batch,
        project=project,
        sub=sub,
        owner=owner,
        assignee=dev,
        workflow_id=workflow_id,
        name=name,
        at=now,
        init_action="open",
        state="open",
        amount_type="ALLOCATED",
        amount=amount,
        currency="EUR",
        exchange_rate="1.0",
    )
    batch.add("permission", resource_id=item, intent="workflowItem.view", party_id=dev)
    for action, role in (("comment", None), ("edit", None), ("resolve", "assignee")):
        batch.add(
            "enabled_action",
            id=new_id("ea"),
            case_id=case,
            action=action,
            scope="",
            trigger="user",
            assigned_role=role,
            status="ENABLED",
            enabled_at=now,
        )
    for role, party, by in (("submitter", owner, "creation_user"), ("assignee", dev, "item_assignee")):
        batch.add("case_role_party", case_id=case, role=role, party_id=party)
        batch.log(
            chain=item,
            kind="role_assigned",
            actor_id=None,
            at=now,
            case_id=case,
            data={"role": role, "partyIds": [party], "by": by},
            **scope,
        )
