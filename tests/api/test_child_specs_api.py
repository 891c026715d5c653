"""Child workflow specs over GraphQL (issue 21): each mistake in a parent's keys is one precise
INVALID_SPEC naming its key; nesting is bounded; the diagram draws child scopes inside their parent."""

from tests.fixtures.child_workflows import REVIEW, tip
from tests.fixtures.documents import CREATE_GROUP, DEFINE


def tip_with(path: str, value, *more) -> dict:
    """The TIP spec with keys set (``None`` removes one): a path and a value, then more pairs."""
    spec = tip("grp_x")
    changes = [(path, value), *zip(more[::2], more[1::2], strict=True)]
    for where, what in changes:
        *parents, last = where.split(".")
        node = spec
        for key in parents:
            node = node[key]
        if what is None:
            del node[last]
        else:
            node[last] = what
    return spec


V = "actions.all_votes"
BAD_CHILD_SPECS = [
    (
        tip_with(f"{V}.children.approve.new_state", "accepted"),
        f"{V}.children.approve.new_state",
        "Action 'approve' names unknown state 'accepted'.",
    ),
    (
        tip_with(f"{V}.for_each", None),
        f"{V}.for_each",
        "Dynamic action 'all_votes' needs for_each: {role, mapping: per_role|per_member|per_user}.",
    ),
    (
        tip_with(f"{V}.for_each", {"role": "voters", "mapping": "per_cat"}),
        f"{V}.for_each.mapping",
        "actions.all_votes.for_each.mapping must be one of per_role, per_member, per_user.",
    ),
    (
        tip_with(f"{V}.for_each", {"role": "jury", "mapping": "per_user"}),
        f"{V}.for_each.role",
        "for_each of 'all_votes' names unknown role 'jury'.",
    ),
    (
        tip_with(f"{V}.complete_when.maybe", {"state": "approved", "all": True}),
        f"{V}.complete_when.maybe",
        "complete_when of 'all_votes' names output 'maybe', which its outputs do not declare.",
    ),
    (
        tip_with(f"{V}.complete_when.no.state", "rejected"),
        f"{V}.complete_when.no.state",
        "Condition 'no' of 'all_votes' names unknown child state 'rejected'.",
    ),
    (
        tip_with(f"{V}.complete_when.no", {"state": "disapproved", "at_least": "3/2"}),
        f"{V}.complete_when.no.at_least",
        'actions.all_votes.complete_when.no.at_least must be a count or a fraction "p/q" with 0 <= p <= q and q > 0.',
    ),
    (
        tip_with(f"{V}.complete_when.no", {"state": "disapproved", "at_least": 1, "all": True}),
        f"{V}.complete_when.no",
        "Condition 'no' of 'all_votes' needs exactly one of at_least, more_than, all.",
    ),
    (
        tip_with(f"{V}.complete_when", None),
        f"{V}.complete_when",
        "Action 'all_votes' has outputs but no complete_when: nothing would pick the output it fires with.",
    ),
    (
        tip_with("actions.withdraw.children", {"x": {}}),
        "actions.withdraw.children",
        "Action 'withdraw' has children, but it is a user action: only workflow, parallel and dynamic actions "
        "have children.",
    ),
    (
        tip_with(
            "actions.sign",
            {
                "trigger": "parallel",
                "enabled_states": ["open"],
                "children": {"a": {}, "b": {"depends_on": {"a": {}}}},
            },
        ),
        "actions.sign.children.b.depends_on",
        "'b' runs side by side with the other children of 'sign', all enabled at once, so it cannot have "
        "depends_on; give 'sign' states (or make 'b' a workflow) to gate it.",
    ),
    (
        tip_with(f"{V}.trigger", "parallel", f"{V}.for_each", None, f"{V}.complete_when", None, f"{V}.outputs", None),
        f"{V}.states",
        "Parallel action 'all_votes' keeps no state: its children run side by side; give a child that needs "
        "states the trigger workflow.",
    ),
    (
        tip_with(f"{V}.trigger", "workflow"),
        f"{V}.for_each",
        "Only a dynamic action has for_each; 'all_votes' is a workflow action.",
    ),
    (
        tip_with(
            "actions.ask",
            {
                "trigger": "workflow",
                "enabled_states": ["open"],
                "states": {"asking": {}},
                "children": {"ok": {"enabled_states": ["asking"]}},
            },
        ),
        "actions.ask.states",
        "Child workflow 'ask' has no terminal state, so it could never complete; mark one terminal or add "
        "complete_when.",
    ),
]


async def test_child_workflow_mistakes_are_each_a_precise_invalid_spec(gql, make_user):
    _, admin = await make_user("root", admin=True)
    group = (await gql(CREATE_GROUP, {"name": "core"}, token=admin))["createGroup"]["group"]
    for spec, field, message in BAD_CHILD_SPECS:
        spec["roles"]["voters"]["static_parties"] = [group["id"]]
        answer = (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]
        assert answer["workflow"] is None
        assert [(e["code"], e["field"], e["message"]) for e in answer["userErrors"]] == [
            ("INVALID_SPEC", ["spec", *field.split(".")], message)
        ], field
    spec = tip(group["id"])
    assert (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["workflow"]["spec"] == spec


async def test_child_workflows_nest_at_most_four_levels(gql, make_user):
    _, admin = await make_user("root", admin=True)

    def nested(depth: int) -> dict:
        action: dict = {"trigger": "workflow", "states": {f"s{depth}": {"terminal": True}}, "children": {}}
        if depth < 5:
            action["children"][f"c{depth}"] = nested(depth + 1) | {"enabled_states": [f"s{depth}"]}
        else:
            action["children"][f"leaf{depth}"] = {"enabled_states": [f"s{depth}"]}
        return action

    spec = {
        "short_name": "deep",
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {"c0": nested(1) | {"enabled_states": ["open"], "new_state": "done"}},
    }
    answer = (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]
    path = ["spec", "actions", "c0", "children", "c1", "children", "c2", "children", "c3", "children", "c4"]
    assert [(e["field"], e["message"]) for e in answer["userErrors"]] == [
        (path, "Child workflows nest at most 4 levels deep.")  # c4 is the fifth level
    ]
    spec["actions"]["c0"]["children"]["c1"]["children"]["c2"]["children"]["c3"]["children"] = {
        "leaf": {"enabled_states": ["s4"]}
    }
    assert (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["userErrors"] == []


DIAGRAM = """query($id: ID!) { node(id: $id) { ... on Workflow { diagram dot: diagram(format: DOT) } } }"""


async def test_the_diagram_draws_each_child_scope_inside_its_parent(gql, make_user):
    _, admin = await make_user("root", admin=True)
    defined = (await gql(DEFINE, {"spec": REVIEW}, token=admin))["defineWorkflow"]["workflow"]
    drawn = (await gql(DIAGRAM, {"id": defined["id"]}, token=admin))["node"]
    lines = drawn["diagram"].splitlines()
    # the parallel parent is a step on the way: its edge leads into its box, the box on to done
    assert "    open --> scope_rev_and_op: rev_and_op (parallel)" in lines
    assert "    scope_rev_and_op --> done" in lines
    # the parallel parent holds both workflow children, each with its own FSM
    start = lines.index('    state "rev_and_op" as scope_rev_and_op {')
    assert lines[start + 1 : start + 8] == [
        '        state "review_wr" as scope_review_wr {',
        '            state "rev_open" as rev_open',
        '            state "rev_done" as rev_done',
        "            [*] --> rev_open",
        "            rev_open --> rev_done: review",
        "            rev_done --> [*]",
        "        }",
    ]
    assert "            opi_open --> opi_done: opinion" in lines
    assert '    subgraph "cluster_rev_and_op" {' in drawn["dot"]
    assert (
        '    "open" -> "scope_rev_and_op" [label="rev_and_op (parallel)", lhead="cluster_rev_and_op"];' in drawn["dot"]
    )
    assert '    "scope_rev_and_op" -> "done" [label="", ltail="cluster_rev_and_op"];' in drawn["dot"]
    assert '        subgraph "cluster_opinion_wr" {' in drawn["dot"]
    assert '"rev_open" -> "rev_done" [label="review"];' in drawn["dot"]
