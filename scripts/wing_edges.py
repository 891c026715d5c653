"""Print the wing-to-wing import edges of engine/ (issue 46): for each pair of wings, how many
imports run from one to the other, and which modules make them (``--detail``). A wing is a
package under engine/ (engine/people, engine/cases...); the root's modules (errors, clock,
registry, validation) are the wing ``root``. Imports inside functions count too.

    python scripts/wing_edges.py [--detail]
"""

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "engine":
        return None
    if len(parts) == 1:
        return "root"
    return parts[1] if (ROOT / "engine" / parts[1]).is_dir() else "root"


def imported(path: Path, module: str) -> list[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base]).strip(".")
            found += [
                f"{base}.{a.name}"
                if (ROOT / Path(*f"{base}.{a.name}".split("."))).with_suffix(".py").exists()
                or (ROOT / Path(*f"{base}.{a.name}".split("."))).is_dir()
                else base
                for a in node.names
            ]
    return found


def edges() -> dict[tuple[str, str], set[tuple[str, str]]]:
    found: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for path in sorted((ROOT / "engine").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = wing_of(module)
        for target in imported(path, module):
            wing = wing_of(target)
            if wing is not None and wing != source and target != "engine":
                found[(source, wing)].add((module, target))  # type: ignore[index]
    return found


def main() -> None:
    detail = "--detail" in sys.argv
    for (source, target), pairs in sorted(edges().items()):
        print(f"{source:10} -> {target:10} {len(pairs)}")
        if detail:
            for module, name in sorted(pairs):
                print(f"    {module} -> {name}")


if __name__ == "__main__":
    main()
