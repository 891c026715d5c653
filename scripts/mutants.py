"""`make mutants`: mutation testing (mutmut, configured in pyproject.toml's [tool.mutmut]) of
the modules where a silent mistake is a security or data bug, then a report.

Arguments go to `mutmut run` (mutant name globs narrow the run, e.g.
"engine.people.permissions.x_visible_filter*"). The report, mutants-report.txt, counts the mutants
by outcome and module and shows each survivor's diff: each is to be killed by a new test or
explained (equivalent mutant) in bench/MUTANTS.md, which also says how long a run takes.
Slow (each mutant runs the tests that reach it): not part of CI.
"""

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = [sys.executable, "-m", "mutmut"]
REPORT = ROOT / "mutants-report.txt"
BAD = ("survived", "timeout", "suspicious", "segfault")
# SQLite: one in-memory-fast database per test, no shared server; the mutants are in Python.
ENV = {**os.environ, "CASEWAY_TEST_BACKEND": "sqlite"}


def results() -> list[tuple[str, str]]:
    """(mutant name, outcome) of every mutant mutmut knows."""
    out = subprocess.run([*MUTMUT, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True, check=True)
    pairs = [line.strip().rsplit(": ", 1) for line in out.stdout.splitlines() if ": " in line]
    return [(name, outcome) for name, outcome in pairs]


def main() -> int:
    if "--report-only" not in sys.argv:  # else: the report of the last run, without running
        args = sys.argv[1:]
        if not any(a.startswith("--max-children") for a in args):
            # Twice the cores: a mutant's tests often wait (a server, a timeout the mutant makes
            # them sit out), and with one child per core the two cores were a third idle.
            args = ["--max-children", str(2 * (os.cpu_count() or 1)), *args]
        subprocess.call([*MUTMUT, "run", *args], cwd=ROOT, env=ENV)
    found = results()
    by_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for name, outcome in found:
        by_module[re.split(r"\.x[_ǁ]", name)[0]][outcome] += 1
    lines = ["Mutants by module and outcome (`not checked`: outside this run's scope)", ""]
    for module, counts in sorted(by_module.items()):
        checked = sum(n for outcome, n in counts.items() if outcome != "not checked")
        score = f"{100 * counts['killed'] / checked:.0f}% killed" if checked else "none checked"
        lines.append(f"{module}: {dict(sorted(counts.items()))} - {score}")
    survivors = [name for name, outcome in found if outcome in BAD]
    lines += ["", f"{len(survivors)} not killed:", ""]
    for name in survivors:
        diff = subprocess.run([*MUTMUT, "show", name], cwd=ROOT, capture_output=True, text=True).stdout
        lines += [
            f"== {name}",
            *[d for d in diff.splitlines() if d.startswith(("-", "+")) and d[:3] not in ("---", "+++")],
            "",
        ]
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[: len(by_module) + 2]))
    print(f"{len(survivors)} mutants not killed: see {REPORT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
