"""Architecture rules that are cheap to check."""

import ast
import re
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


def _imports(path: Path) -> set[str]:
    """The top-level packages a module imports, wherever the import is (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _layer_table() -> dict[str, set[str] | None]:
    """docs/architecture.md's table of layers: each directory and the layers it may import
    (None: all of them)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("| directory | what | may import |") :].split("\n\n")[0]
    layers: dict[str, set[str] | None] = {}
    for row in table.splitlines()[2:]:
        directory, _, may = (cell.strip() for cell in row.strip("|").split(" | "))
        name = directory.strip("`/")
        layers[name] = None if may == "all" else set(re.findall(r"`(\w+)`", may))
    return layers


def test_every_layer_imports_only_what_the_architecture_table_allows():
    """The table of layers in docs/architecture.md, checked module by module: models import
    nothing of the others, the engine only models, resolvers the engine and models, schema
    those and resolvers, the server all (an arrow up, such as schema importing server.metrics,
    fails here)."""
    layers = _layer_table()
    assert {"models", "engine", "resolvers", "schema", "server"} <= set(layers), layers
    wrong = []
    for layer, allowed in layers.items():
        if allowed is None:
            continue
        others = set(layers) - allowed - {layer}
        for path in sorted((ROOT / layer).rglob("*.py")):
            wrong += [f"{path.relative_to(ROOT)} imports {name}" for name in sorted(_imports(path) & others)]
    assert wrong == []


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


def _engine_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((ROOT / "engine").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _engine_imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str, bool]]:
    """The engine modules ``name`` imports: (line, module, whether inside a function)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, inside) for a in child.names if a.name in modules)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - child.level + 1], base]).strip(".")
                for alias in child.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    if target in modules and target != name:
                        found.append((child.lineno, target, inside))
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return found


def test_engine_imports_run_one_way():
    """No import inside a function in engine/ (the way a circle is dodged), and no circle among
    the engine's modules: the parent <-> child recursion is a function handed down
    (engine/cases/children.py), the built-in callbacks register when the engine package is imported
    (engine/registry.py), shared rules live below both of their users."""
    modules = _engine_modules()
    graph: dict[str, set[str]] = {}
    local = []
    for name, path in modules.items():
        imports = _engine_imports(name, path, modules)
        local += [f"{path.relative_to(ROOT)}:{line} imports {target}" for line, target, inside in imports if inside]
        graph[name] = {target for _, target, _ in imports if target != "engine"}  # the package: its own exports
    assert local == [], "an import inside a function"
    done: set[str] = set()

    def cycle_from(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        for target in sorted(graph[name]):
            found = cycle_from(target, [*path, name])
            if found:
                return found
        done.add(name)
        return None

    cycles = [c for c in (cycle_from(name, []) for name in sorted(graph)) if c]
    assert cycles == [], f"an import circle: {' -> '.join(cycles[0])}"


def _wing_stack() -> list[str]:
    """docs/architecture.md's stack of wings, bottom first: the first fenced block under
    "## Wings", one wing a line (its first word), the highest at the top."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Wings") :]
    block = section.split("```")[1]
    return [line.split()[0] for line in block.strip("\n").splitlines() if line[:1].strip()][::-1]


def _wing(module: str) -> str:
    """The wing of an engine module: its package under engine/, or ``root``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (ROOT / "engine" / parts[1]).is_dir()) else "root"


def _face(wing: str) -> set[str]:
    """The names a wing's __init__.py lists in ``__all__``, read without importing it."""
    for node in ast.parse((ROOT / "engine" / wing / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return {element.value for element in node.value.elts}  # type: ignore[attr-defined]
    return set()


def test_the_wings_import_one_way_and_only_each_others_faces():
    """Issue 46: the stack of docs/architecture.md, checked import by import (imports inside
    functions included): an engine module imports only from its own wing and the wings below it,
    and a module outside a wing (another wing, resolvers/, schema/, server/, bench/) imports
    only the modules its face names. engine/__init__.py, the engine's face, may import any wing."""
    stack = _wing_stack()
    wings = {p.name for p in (ROOT / "engine").iterdir() if (p / "__init__.py").exists()}
    assert sorted(stack) == sorted([*wings, "root"]), "every wing once in docs/architecture.md's stack"
    rank = {wing: place for place, wing in enumerate(stack)}
    modules = _engine_modules()
    faces = {wing: _face(wing) for wing in wings}
    wrong = []
    for package in ("engine", "resolvers", "schema", "server", "models", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if package == "engine":
                imports = [target for _, target, _ in _engine_imports(name, path, modules)]
            else:
                imports = [t for t in _imported_names(path) if t in modules]
            source = _wing(name) if package == "engine" else None
            for target in imports:
                wing = _wing(target)
                if name == "engine" or target == "engine" or wing == source:
                    continue
                if source is not None and rank[wing] > rank[source]:
                    wrong.append(f"{name} ({source}) imports {target} ({wing}, higher)")
                module = target.split(".")
                if wing != "root" and len(module) > 2 and module[2] not in faces[wing]:
                    wrong.append(f"{name} imports {target}, private to engine/{wing}/")
    assert wrong == []


def _imported_names(path: Path) -> set[str]:
    """The dotted modules (or module.name) a file imports, absolute imports only."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_engines_root_holds_only_errors_clock_registry_and_validation():
    root = sorted(p.name for p in (ROOT / "engine").glob("*.py"))
    assert root == ["__init__.py", "clock.py", "errors.py", "registry.py", "validation.py"]


def test_no_module_is_over_400_lines():
    """A module a reader can hold: the application's (engine/, models/, resolvers/, schema/,
    server/) are at most 400 lines."""
    long = [
        f"{path.relative_to(ROOT)}: {lines}"
        for package in ("engine", "models", "resolvers", "schema", "server")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > 400
    ]
    assert long == []


# The rule itself, and two rules of cases that happen to name the same statuses (which cases a
# version change concerns; which cases may be canceled).
_OTHER_RULES = {"engine/tree/item_status.py", "engine/spec/versions.py", "engine/cases/lifecycle.py"}


def test_an_items_status_is_defined_once_and_every_road_reads_it():
    """Issue 46: an item is OPEN while its case is ACTIVE or SUSPENDED, CLOSED once COMPLETED or
    CANCELED; the resolvers, the compiled form and the filters (both roads) each restated it.
    Now only engine/tree/item_status.py names those sets; a road that writes one again fails
    here, and each road is checked to read the module."""
    restated = re.compile(r"""["']ACTIVE["'],\s*["']SUSPENDED["']|["']COMPLETED["'],\s*["']CANCELED["']""")
    found = [
        str(path.relative_to(ROOT))
        for package in ("engine", "resolvers", "schema", "server")
        for path in sorted((ROOT / package).rglob("*.py"))
        if restated.search(path.read_text()) and path.relative_to(ROOT).as_posix() not in _OTHER_RULES
    ]
    assert found == [], "an item's status restated: read engine/tree/item_status.py"
    for road in (
        "schema/item.py",
        "resolvers/compiled/forms.py",
        "resolvers/compiled/pages.py",
        "resolvers/filters.py",
    ):
        assert "engine.tree.item_status" in (ROOT / road).read_text(), road
