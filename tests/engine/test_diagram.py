"""The workflow diagram says what a spec does: states by their pretty names, timed edges say when
they fire, outputs say which output leads where, and a parent's child scope is drawn as a step on
the way, inside the box its edge leads into."""

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
    # each state by its pretty name (the dashboard draws this text), then the machine
    assert lines[:7] == [
        "stateDiagram-v2",
        '    state "Draft" as draft',
        '    state "In review" as review',
        '    state "Paid" as paid',
        '    state "Void" as void',
        "    [*] --> draft",
        "    draft --> review: Submit",
    ]
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


NESTED = {
    "short_name": "contract",
    "roles": {"lawyer": {"callbacks": ["creation_user"]}},
    "states": {
        "open": {"pretty_name": "Open"},
        "signed": {"pretty_name": 'Signed "as is"', "terminal": True},
        "dropped": {"pretty_name": "Dropped", "terminal": True},
    },
    "actions": {
        "init": {"trigger": "init", "new_state": "open"},
        "legal": {
            "pretty_name": "Legal review",
            "trigger": "workflow",
            "enabled_states": ["open"],
            "outputs": {"ok": "signed", "no": "dropped"},
            "complete_when": {"ok": {"state": "fine", "all": True}, "no": {"state": "flawed", "at_least": 1}},
            "states": {"reading": {"pretty_name": "Reading"}, "fine": {"terminal": True}, "flawed": {"terminal": True}},
            "children": {
                "start": {"trigger": "init", "new_state": "reading"},
                "pass": {
                    "pretty_name": "Pass",
                    "assigned_role": "lawyer",
                    "enabled_states": ["reading"],
                    "new_state": "fine",
                },
                "fail": {
                    "pretty_name": "Fail",
                    "assigned_role": "lawyer",
                    "enabled_states": ["reading"],
                    "new_state": "flawed",
                },
            },
        },
        "drop": {"pretty_name": "Drop", "enabled_states": ["open"], "new_state": "dropped"},
    },
}


def test_a_child_scope_is_a_step_drawn_inside_the_box_its_parent_leads_into():
    lines = render(workflows.parse_spec(NESTED), "MERMAID").splitlines()
    # the parent's edge goes into its box, titled by its pretty name, and the box leads on per output
    assert "    open --> scope_legal: Legal review (workflow)" in lines
    assert "    scope_legal --> signed: ok" in lines and "    scope_legal --> dropped: no" in lines
    assert not any(line.startswith("    open --> signed") for line in lines)  # no edge around the box
    assert "    open --> dropped: Drop" in lines
    # a pretty name cannot end Mermaid's quotes: its double quotes become single ones
    assert """    state "Signed 'as is'" as signed""" in lines
    start = lines.index('    state "Legal review" as scope_legal {')
    assert lines[start + 1 : start + 5] == [
        '        state "Reading" as reading',
        '        state "fine" as fine',
        '        state "flawed" as flawed',
        "        [*] --> reading",
    ]
    assert "        reading --> fine: Pass" in lines and lines[-1] == "    }"
    # DOT alike: the parent's edge ends at its cluster's border, the outputs leave from it
    dot = render(workflows.parse_spec(NESTED), "DOT").splitlines()
    assert "    compound=true;" in dot
    assert '    "open" -> "scope_legal" [label="Legal review (workflow)", lhead="cluster_legal"];' in dot
    assert '    "scope_legal" -> "signed" [label="ok", ltail="cluster_legal"];' in dot
    assert '    "scope_legal" -> "dropped" [label="no", ltail="cluster_legal"];' in dot
    assert not any(line.startswith('    "open" -> "signed"') for line in dot)
    start = dot.index('    subgraph "cluster_legal" {')
    assert dot[start + 1 : start + 4] == [
        '        label="Legal review";',
        '        "scope_legal" [shape=point, style=invis, width=0, height=0];',  # the edges' anchor
        '        "reading" [shape=circle, label="Reading"];',
    ]
    assert '        "reading" -> "fine" [label="Pass"];' in dot
