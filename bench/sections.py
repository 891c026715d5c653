"""A scenario's section of bench/REPORT.md: the commit it measured, and putting the section in
place of its previous run's, shared by the scenarios run alone (A1 bench/abuse.py, T1
bench/timers.py) so that each rewrites only its own part of the report in the same way."""

import argparse
import subprocess
from collections.abc import Callable
from pathlib import Path

from bench.server import ROOT

REPORT = ROOT / "bench" / "REPORT.md"
PROFILE = "\n## Profile findings"  # the report's prose part, after the measured sections


def commit(checkout: Path = ROOT, *, subject: bool = False) -> str:
    """The short hash (and with ``subject`` the subject) of ``checkout``'s HEAD, for the record."""
    fmt = "%h %s" if subject else "%h"
    out = subprocess.run(["git", "-C", str(checkout), "log", "-1", f"--format={fmt}"], capture_output=True, text=True)
    return out.stdout.strip() or "no git commit"


def replace(report: Path, lines: list[str], *, begin: str, end: str, after: str | None = None) -> None:
    """Put the section (``lines``, from its ``begin`` to its ``end`` marker) into ``report`` in
    place of the one there; else just after the ``after`` marker when there is one; else before
    the profile findings; else at the end. The rest of the report stays as it was."""
    text = report.read_text() if report.exists() else ""
    block = "\n".join(lines)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    elif after is not None and after in text:
        head, rest = text.split(after, 1)
        text = head + after + "\n\n" + block + rest
    elif PROFILE in text:
        head, rest = text.split(PROFILE, 1)
        text = head.rstrip("\n") + "\n\n" + block + "\n" + PROFILE + rest
    else:
        text = text + ("\n" if text else "") + block + "\n"
    report.write_text(text)


# The sections a report holds between markers, in the report's order: a scenario measured apart
# (W1r, A1, T1, D1, R5, R6, R4i, I1, M1, RR) or skipped by a `make bench` run keeps its last measurement.
SECTIONS = ("S1", "W1r", "A1", "T1", "J1", "J2", "D1", "R5", "R6", "R4i", "I1", "M1", "RR")


def carried_over(previous: str, measured: str) -> list[str]:
    """The sections of the ``previous`` report that ``measured`` (this run's sections) lacks,
    each whole from its begin marker to its end marker, in the report's order."""
    kept = []
    for name in SECTIONS:
        begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
        if begin not in measured and begin in previous and end in previous:
            kept.append(begin + previous.split(begin, 1)[1].split(end, 1)[0] + end)
    return kept


def verdict(problems: list[str]) -> str:
    """A table row's verdict: ``ok``, or what failed, as every scenario words it."""
    return "ok" if not problems else "**fail**: " + "; ".join(problems)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--report PATH`` and ``--no-report``, as every scenario run alone takes them."""
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--no-report", action="store_true", help="print the section only")


def publish(lines: list[str], args: argparse.Namespace, *, name: str, write: Callable[[Path, list[str]], None]) -> None:
    """Print the section, and unless ``--no-report`` ``write`` it into ``--report``."""
    print("\n".join(lines))
    if not args.no_report:
        write(args.report, lines)
        print(f"wrote the {name} section of {args.report}")
