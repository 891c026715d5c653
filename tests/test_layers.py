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
    from tests.fixtures.database import modelled

    upgrade(f"sqlite:///{tmp_path / 'm.db'}")
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    with engine.connect() as conn:
        options = {"compare_type": True, "include_name": modelled}
        diff = compare_metadata(MigrationContext.configure(conn, opts=options), SQLModel.metadata)
    engine.dispose()
    assert diff == []


def _graphql_documents(path: Path) -> dict[str, str]:
    """The module-level GraphQL documents of a test file, whitespace folded: NAME = \"\"\"...\"\"\"."""
    documents = {}
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.isupper()
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.value.value.lstrip().startswith(("query", "mutation", "subscription", "{"))
        ):
            documents[node.targets[0].id] = " ".join(node.value.value.split())
    return documents


def test_a_graphql_document_name_means_one_document_and_a_shared_document_is_written_once():
    """A reader who meets CREATE_ITEM in two test modules should be reading the same document:
    a name used twice must hold the same text, and a text used by two modules lives once, in
    tests/fixtures/ (documents.py for most), imported by both."""
    by_name: dict[str, dict[str, set[str]]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for name, text in _graphql_documents(path).items():
            by_name.setdefault(name, {}).setdefault(text, set()).add(str(path.relative_to(ROOT)))
    mixed = {name: sorted(p for ps in texts.values() for p in ps) for name, texts in by_name.items() if len(texts) > 1}
    assert mixed == {}, "one name, different documents: rename one to say what it selects"
    by_text: dict[str, set[str]] = {}
    for texts in by_name.values():
        for text, paths in texts.items():
            by_text.setdefault(text, set()).update(paths)
    copied = sorted(sorted(paths) for paths in by_text.values() if len(paths) > 1)
    assert copied == [], "the same document written in two modules: move it to tests/fixtures/documents.py"
