"""Architecture rules that are cheap to check."""

import ast
from pathlib import Path

from schema import schema

ROOT = Path(__file__).resolve().parent.parent


def test_schema_file_is_in_sync():
    exported = schema.as_str() + "\n"
    assert (ROOT / "schema" / "schema.graphql").read_text() == exported, "run `make schema`"


def test_engine_and_models_never_import_the_api_layer():
    forbidden = ("strawberry", "starlette", "graphql", "resolvers", "schema", "server")
    for package in ("engine", "models"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                )
                for name in names:
                    assert name.split(".")[0] not in forbidden, f"{path} imports {name}"


def test_migrations_match_the_models(tmp_path):
    """Autogenerate against a freshly migrated database finds nothing to do."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine
    from sqlmodel import SQLModel

    from server.migrate import upgrade

    upgrade(f"sqlite:///{tmp_path / 'm.db'}")
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    engine.dispose()
    assert diff == []
