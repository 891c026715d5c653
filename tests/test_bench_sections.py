"""bench/sections.py: a `make bench` run that skips a scenario (or never runs one measured
apart, such as M1) keeps that scenario's last section of the report instead of dropping it."""

import pytest

from bench.sections import carried_over

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free

PREVIOUS = """# report
<!-- A1 -->
## A1: old abuse numbers
<!-- /A1 -->

<!-- J1 -->
## J1: old jobs
<!-- /J1 -->

<!-- M1 -->
## M1: 1,725 cases/s
<!-- /M1 -->
"""


def test_a_section_this_run_did_not_measure_is_kept_whole_and_one_it_did_is_not():
    measured = "# report\n<!-- J1 -->\n## J1: new jobs\n<!-- /J1 -->\n"
    assert carried_over(PREVIOUS, measured) == [
        "<!-- A1 -->\n## A1: old abuse numbers\n<!-- /A1 -->",
        "<!-- M1 -->\n## M1: 1,725 cases/s\n<!-- /M1 -->",
    ]


def test_a_first_report_carries_nothing_over():
    assert carried_over("", "# report\n") == []
