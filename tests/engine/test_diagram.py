"""The workflow diagram says what a spec does: timed edges say when they fire, outputs say
which output leads where."""

import pytest

from engine.spec import workflows
from engine.spec.diagram import duration, render
from engine.spec.workflows import spec_of
from models import Database

SPEC = {
    "short_name": "expense",
    "states": {
        "draft": {"pretty_name": "Draft"},
        "review": {"pretty_name": "In review"},
        "paid": {"pretty_name": "Paid", "terminal": True},
        "void": {"pretty_name": "Void", "terminal": True},
    },
    "actions": {
        "submit": {"pretty_name": "Submit", "enabled_states": ["draft"], "new_state": "review"},
        "decide": {"pretty_name": "Decide", "enabled_states": ["review"], "outputs": {"yes": "paid", "no": "draft"}},
        "expire": {"pretty_name": "Expire", "trigger": "time", "enabled_states": ["draft"], "timeout_seconds": 2},
        "lapse": {
            "pretty_name": "Lapse",
            "enabled_states": ["review"],
            "timeout_seconds": 7 * 86400,
            "new_state": "void",
        },
        "nudge": {"pretty_name": 'Say "hi"', "enabled_states": ["review"], "timeout_seconds": 90},
    },
}


async def diagrams(db: Database) -> tuple[str, str]:
    async with db.transaction() as s:
        workflow = await workflows.define_workflow(s, actor=None, spec=SPEC)
    spec = spec_of(workflow)
    return render(spec, "MERMAID"), render(spec, "DOT")


async def test_timed_and_output_edges_are_labelled(db: Database):
    mermaid, dot = await diagrams(db)
    lines = mermaid.splitlines()
    assert lines[:3] == ["stateDiagram-v2", "    [*] --> draft", "    draft --> review: Submit"]
    # one edge per output, to the output's state, named by the output
    assert "    review --> paid: Decide (yes)" in lines
    assert "    review --> draft: Decide (no)" in lines
    assert not any("review --> review: Decide" in line for line in lines)
    # timed edges: the time in the largest whole unit; no new_state is a loop
    assert "    draft --> draft: Expire (after 2 s)" in lines
    assert "    review --> void: Lapse (after 7 d)" in lines
    assert '    review --> review: Say "hi" (after 90 s)' in lines
    assert '"review" -> "paid" [label="Decide (yes)"];' in dot
    assert '"draft" -> "draft" [label="Expire (after 2 s)"];' in dot
    assert '"review" -> "review" [label="Say \\"hi\\" (after 90 s)"];' in dot  # a quote cannot end the label


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (2, "2 s"),
        (59, "59 s"),
        (60, "1 min"),
        (90, "90 s"),
        (300, "5 min"),
        (7200, "2 h"),
        (5400, "90 min"),
        (86400, "1 d"),
        (90000, "25 h"),
    ],
)
def test_durations_use_the_largest_whole_unit(seconds: int, text: str):
    assert duration(seconds) == text
