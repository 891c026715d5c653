"""Architecture rules that are cheap to check."""

import ast
import re
from pathlib import Path

from engine.spec.defaults import NAMED, VALUES
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


# -- each rule once (issue 46): the spec's defaults, page order and cursors, the timestamp format


def _road_modules(*skip: str) -> list[Path]:
    """The modules of the two read roads (resolvers/, its compiled/ among them, and schema/)."""
    return [
        path
        for package in ("resolvers", "schema")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.relative_to(ROOT).as_posix() not in skip
    ]


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _callee(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _spec_default_restatements(source: str) -> list[str]:
    """Where ``source`` writes a spec default itself: a defaulted key of a spec read other than
    through engine/spec/defaults.py (an argument of any call but ``name_sql``/``value_sql``/
    ``name_of``, or the column names ``label``/``column``/``_state_spec`` give), a JSON path to
    one, a COALESCE over a default's value, or a Python fallback (``x.pretty_name or ...``,
    ``... if ... else ...``) over a defaulted name."""
    keys = set(NAMED) | {key for key, value in VALUES.items() if value is not None}
    values = {value for value in VALUES.values() if isinstance(value, str)}
    allowed = {"name_sql", "value_sql", "name_of", "label", "column", "_state_spec"}
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parent = parents.get(node)
            if node.value in keys and isinstance(parent, ast.Call) and _callee(parent) not in allowed:
                found.append(f"line {node.lineno}: {_callee(parent)}({node.value!r})")
            if any(node.value.endswith(f"$.{key}") for key in keys):
                found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.Call) and _callee(node) == "coalesce":
            inside = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)]
            if any(value in keys | values for value in inside):
                found.append(f"line {node.lineno}: coalesce over {inside}")
        if isinstance(node, ast.IfExp | ast.BoolOp) and (isinstance(node, ast.IfExp) or isinstance(node.op, ast.Or)):
            if any(isinstance(n, ast.Attribute) and n.attr in NAMED for n in ast.walk(node)):
                found.append(f"line {node.lineno}: a fallback over a pretty name")
    return found


def test_the_specs_defaults_are_written_once_and_every_road_reads_them():
    """Issue 46: a pretty name falls back to the short name, a past tense to the pretty name,
    ``trigger`` is user and a flag false when the spec leaves them out; the parser wrote that
    in Python and the compiled reads again in SQL (COALESCE over the stored spec's keys). Now
    engine/spec/defaults.py writes each once, in both forms; a road that reads a defaulted key
    itself, or writes a fallback over a pretty name, fails here."""
    samples = [  # restatements this session removed: the check must see each
        'func.coalesce(_text(b, body, "pretty_past_tense"), _text(b, body, "pretty_name"), source.c.action)',
        'func.upper(func.coalesce(_text(b, action_spec(b, source), "trigger"), "user"))',
        'terminal = func.json_extract(states.c.value, _quoted("$.terminal")) == 1',
        "past = spec_action.pretty_past_tense if spec_action is not None else action",
    ]
    assert all(_spec_default_restatements(sample) for sample in samples)
    found = {
        str(path.relative_to(ROOT)): hits
        for path in _road_modules()
        if (hits := _spec_default_restatements(path.read_text()))
    }
    assert found == {}, "a spec default restated: read engine/spec/defaults.py"
    for road in (
        "engine/spec/spec_checker.py",
        "engine/spec/action_specs.py",
        "engine/spec/specs.py",
        "resolvers/compiled/actions.py",
        "resolvers/compiled/workflows.py",
        "resolvers/compiled/fields.py",
        "resolvers/case_fields.py",
    ):
        assert "engine.spec.defaults" in (ROOT / road).read_text(), road


# A page's order or cursor written inline: a NULLs-last order (``x.is_(None), x, ...``), a row
# compared with a cursor (``> after``, ``> cursor``, ``> key.after``, ``> at``...), a log
# entry's cursor made of its seq.
_PAGE_RULES = re.compile(
    r"""(?P<order>(\b[\w.]+)\.is_\(None\),\s*\2\s*,)"""
    r"""|(?P<cursor>>\s*(?:(?:after|cursor|past|at|at_due|after_due|key\.after|filt\.after_seq)\b|args\["after"\]))"""
    r"""|(?P<seq>cast\([\w.]*seq,\s*String\)|str\([\w.]*\.seq\))"""
)


def test_page_order_and_cursors_are_written_once_and_every_road_reads_them():
    """Issue 46: a page's order (a subproject's ordering first, then creation; tasks by due
    date, none last, ties by id) and where its cursor leaves off were written on each road
    (resolvers/child_pages.py, due_dates.py, task_order.py; resolvers/compiled/pages.py,
    tasks.py, log.py). Now resolvers/pagination.py writes them once as SQL both roads build
    with; a road that orders or cuts a page itself fails here."""
    samples = [  # restatements this session removed: the check must see each
        "order = [position.is_(None), position, child.c.id]",
        'and_(at.is_(None), listed.c.position.is_(None), item.c.id > args["after"])',
        "dated = dated.where(at_due.is_not(None), task.c.due_date > at_due)",
        "cursor = cast(entry.c.seq, String)",
        "keyset_page(rows, limit=limit, total=total, cursor=lambda r: str(r.seq))",
    ]
    assert all(_PAGE_RULES.search(sample) for sample in samples)
    found = [
        f"{path.relative_to(ROOT)}: {hit.group(0)}"
        for path in _road_modules("resolvers/pagination.py")
        for hit in _PAGE_RULES.finditer(path.read_text())
    ]
    assert found == [], "a page's order or cursor restated: read resolvers/pagination.py"
    for road in (
        "resolvers/child_pages.py",
        "resolvers/compiled/pages.py",
        "resolvers/due_dates.py",
        "resolvers/task_order.py",
        "resolvers/compiled/tasks.py",
        "resolvers/resources.py",
        "resolvers/compiled/log.py",
    ):
        assert "resolvers.pagination import" in (ROOT / road).read_text(), road


# An instant or a day formatted inline: Python's formatting, PostgreSQL's, or the fraction's text.
_TIME_FORMAT = re.compile(r"isoformat\(|strftime\(|to_char\(|AT TIME ZONE|\.000000|\+00:00")


def test_timestamps_are_formatted_once_and_both_roads_read_it():
    """Issue 46: how an instant reads (ISO 8601 in UTC, ``+00:00``, the fraction left out when
    zero) was strawberry's ``isoformat`` on the resolvers' road and SQL in
    resolvers/compiled/sql.py; a day (``YYYY-MM-DD``) likewise, and again in two compiled
    modules. resolvers/timestamps.py now writes both, in both forms: the schema's DateTime and
    Date scalars serialize with it, the compiled JSON is built with it."""
    assert _TIME_FORMAT.search('return func.to_char(value, "YYYY-MM-DD") if b.json.postgres else value')
    found = [
        f"{path.relative_to(ROOT)}: {hit.group(0)}"
        for path in _road_modules("resolvers/timestamps.py")
        for hit in _TIME_FORMAT.finditer(path.read_text())
    ]
    assert found == [], "an instant formatted again: read resolvers/timestamps.py"
    for road in ("schema/base.py", "resolvers/compiled/sql.py", "resolvers/compiled/resource_fields.py"):
        assert "resolvers.timestamps import" in (ROOT / road).read_text(), road
    assert schema._schema.type_map["DateTime"].serialize.__module__ == "resolvers.timestamps"


# A viewer's task list built again: a task marked with the absent user who lends it, the
# collapse to one row per task (own when any of the viewer's parties has it), a form reading
# ``on_behalf_of`` into a party.
_TASK_RULES = re.compile(
    r"""(?P<lent>\babsent_id\b)"""
    r"""|(?P<own>null\(\)\.label\(["']behalf["']\))"""
    r"""|(?P<once>\.is_\(None\),\s*1\))"""
    r"""|(?P<form>party\([^()]*on_behalf_of\))"""
)


def test_whose_tasks_are_written_once_and_every_road_reads_it():
    """Issue 46: a viewer's tasks are their own parties' and those lent to them by the absent
    users they stand in for (engine/people/deputies.py), one row per task, carrying
    ``on_behalf_of`` unless the task is the viewer's own too. resolvers/cases.py,
    resolvers/due_dates.py and resolvers/compiled/tasks.py each wrote that, and the compiled
    ``EnabledAction`` and ``Activity`` forms each read ``on_behalf_of``. Now
    resolvers/task_order.py writes the rule (``viewer_tasks``) and resolvers/compiled/form.py
    the form (``ON_BEHALF_OF``); a road that writes either again fails here."""
    samples = [  # restatements this session removed: the check must see each
        'own = select(task.enabled_action_id, null().label("behalf")).where(task.party_id == party)',
        'select(task.enabled_action_id, func.min(represented.c.absent_id).label("behalf"))',
        "own_too = func.max(when((found.c.behalf.is_(None), 1), else_=0))",
        "return b.json.nested(party(b, field.sub, source.c.on_behalf_of))",
    ]
    assert all(_TASK_RULES.search(sample) for sample in samples)
    found = [
        f"{path.relative_to(ROOT)}: {hit.group(0)}"
        for path in _road_modules("resolvers/task_order.py", "resolvers/compiled/form.py")
        for hit in _TASK_RULES.finditer(path.read_text())
    ]
    assert found == [], "whose a task is restated: read resolvers/task_order.py (viewer_tasks)"
    for road in ("resolvers/cases.py", "resolvers/due_dates.py", "resolvers/compiled/tasks.py"):
        assert "viewer_tasks" in (ROOT / road).read_text(), road
    for road in ("resolvers/compiled/actions.py", "resolvers/compiled/forms.py"):
        assert "ON_BEHALF_OF" in (ROOT / road).read_text(), road
