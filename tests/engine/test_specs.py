"""Workflow specs (engine/spec/specs.py, engine/spec/spec_checker.py): every wrongly typed key and every
value the engine cannot run is an INVALID_SPEC error with its path, never an exception and never
a definition that breaks cases; sizes are bounded. How a valid spec runs is in test_transitions.py
(and the child-workflow modules' tests)."""

import copy
from typing import Any

import pytest

from engine import DomainError, registry
from engine.errors import DomainErrors
from engine.spec import workflows
from engine.spec.spec_checker import MAX_ACTIONS, MAX_CHILD_DEPTH, MAX_ERRORS, MAX_STATES, MAX_TIMEOUT, MAX_TRANSITIONS
from engine.spec.spec_model import ActionSpec, StateSpec
from models import Database


def base() -> dict[str, Any]:
    return {
        "short_name": "review",
        "roles": {"author": {"pretty_name": "Author"}, "editor": {}},
        "states": {"draft": {}, "done": {"terminal": True}},
        "actions": {
            "start": {"trigger": "init", "new_state": "draft"},
            "finish": {"assigned_role": "editor", "assigned_states": ["draft"], "new_state": "done"},
        },
    }


def with_(path: str, value: Any) -> dict[str, Any]:
    """The base spec with the key at a dotted ``path`` set to ``value``."""
    spec = copy.deepcopy(base())
    *parents, last = path.split(".")
    node = spec
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return spec


F = "actions.finish"
BAD_SPECS = [
    # (spec, the field path of the first error, a word of its message)
    (with_(f"{F}.assigned_role", ["editor"]), f"{F}.assigned_role", "not a list"),
    (with_(f"{F}.assigned_role", 5), f"{F}.assigned_role", "not a number"),
    (with_(f"{F}.depends_on", {"start": 5}), f"{F}.depends_on.start", "not a number"),
    (with_(f"{F}.depends_on", ["start"]), f"{F}.depends_on", "not a list"),
    (with_(f"{F}.depends_on", {"start": {"min": "1"}}), f"{F}.depends_on.start.min", "whole number"),
    (with_(f"{F}.depends_on", {"start": {"min": -1}}), f"{F}.depends_on.start.min", "between 0"),
    (with_(f"{F}.depends_on", {"start": {"min": 2, "max": 1}}), f"{F}.depends_on.start.max", "at least min"),
    (with_(f"{F}.depends_on", {"start": {"least": 1}}), f"{F}.depends_on.start.least", "Unknown key"),
    (with_(f"{F}.allowed_roles", "editor"), f"{F}.allowed_roles", "not a string"),
    (with_(f"{F}.allowed_roles", [["editor"]]), f"{F}.allowed_roles", "list of role names"),
    (with_(f"{F}.enabled_states", {"draft": True}), f"{F}.enabled_states", "not an object"),
    (with_(f"{F}.new_state", ["done"]), f"{F}.new_state", "not a list"),
    (with_(f"{F}.outputs", {"ok": ["done"]}), f"{F}.outputs.ok", "not a list"),
    (with_(f"{F}.outputs", {"ok": "nowhere"}), f"{F}.outputs.ok", "unknown state"),
    (with_(f"{F}.trigger", ["user"]), f"{F}.trigger", "one of user"),
    (with_(f"{F}.trigger", "sometimes"), f"{F}.trigger", "one of user"),
    (with_(f"{F}.always_enabled", "yes"), f"{F}.always_enabled", "true or false"),
    (with_(f"{F}.pretty_name", 7), f"{F}.pretty_name", "non-empty string"),
    (with_(f"{F}.pretty_name", "p" * 201), f"{F}.pretty_name", "longer than 200"),
    (with_(f"{F}.pretty_name", "a\x00b"), f"{F}.pretty_name", "NUL"),
    (with_(f"{F}.privileges", ["workflowItem.fly"]), f"{F}.privileges", "unknown privilege"),
    (with_(f"{F}.side_effects", [42]), f"{F}.side_effects", "entries are a name or {kind: {arguments}}"),
    (with_(f"{F}.side_effects", [{"webhook": {}}]), f"{F}.side_effects", 'webhook needs {"endpoint"'),
    (with_(f"{F}.side_effects", "capture_resolution"), f"{F}.side_effects", "must be a list"),
    (with_(f"{F}.timeout_seconds", 10**12), f"{F}.timeout_seconds", "between 0 and 31536000"),
    (with_(f"{F}.timeout_seconds", MAX_TIMEOUT + 1), f"{F}.timeout_seconds", "between 0"),
    (with_(f"{F}.timeout_seconds", -1), f"{F}.timeout_seconds", "between 0"),
    (with_(f"{F}.timeout_seconds", 1.5), f"{F}.timeout_seconds", "whole number of seconds"),
    (with_(f"{F}.timeout_seconds", True), f"{F}.timeout_seconds", "whole number of seconds"),
    (with_(f"{F}.timeout_seconds", "60"), f"{F}.timeout_seconds", "not a string"),
    (with_(f"{F}.children", {"x": {}}), f"{F}.children", "only workflow, parallel and dynamic actions have children"),
    (with_("actions", ["start"]), "actions", "not a list"),
    (with_("actions.finish", "go"), F, "not a string"),
    (with_("roles.editor", []), "roles.editor", "not a list"),
    (with_("roles.editor.callbacks", "creation_user"), "roles.editor.callbacks", "not a string"),
    (with_("roles.editor.callbacks", ["summon"]), "roles.editor.callbacks", "unknown assignee callback"),
    (with_("roles.editor.static_parties", [5]), "roles.editor.static_parties", "user or group id"),
    (with_("roles.editor.allowed_parties", {"usr_x": 1}), "roles.editor.allowed_parties", "not an object"),
    (with_("roles.editor.assignable_by", ["ghost"]), "roles.editor.assignable_by", "unknown role"),
    (with_("states.done.terminal", "yes"), "states.done.terminal", "true or false"),
    (with_("states.done.hidden_fields", "amount"), "states.done.hidden_fields", "not a string"),
    (with_("states", ["draft"]), "states", "not a list"),
    (with_("short_name", 5), "short_name", "short_name is required"),
    (with_("short_name", "s" * 65), "short_name", "1 to 64"),
    (with_("description", ["x"]), "description", "not a list"),
    (with_("states", {"draft": {}, "d" * 65: {}}), "states", "state name"),
    (with_("side_effects", "capture_resolution"), "side_effects", "not a string"),
    (with_("colour", "blue"), "colour", "Unknown key"),
]


@pytest.mark.parametrize(("spec", "field", "words"), BAD_SPECS, ids=[f"{f}:{w}" for _, f, w in BAD_SPECS])
async def test_bad_specs_are_refused_with_code_and_field(db: Database, spec, field, words):
    with pytest.raises(DomainError) as raised:
        async with db.transaction() as s:
            await workflows.define_workflow(s, actor=None, spec=spec)
    errors = getattr(raised.value, "errors", [raised.value])
    assert all(e.code == "INVALID_SPEC" for e in errors)
    assert errors[0].field == ["spec", *field.split(".")], [(e.field, e.message) for e in errors]
    assert words in errors[0].message, errors[0].message


async def test_the_base_spec_is_valid_and_limits_admit_a_year(db: Database):
    async with db.transaction() as s:
        spec = with_("actions.finish.timeout_seconds", MAX_TIMEOUT)
        workflow = await workflows.define_workflow(s, actor=None, spec=spec)
    assert workflow.version == 1 and workflow.spec["actions"]["finish"]["timeout_seconds"] == MAX_TIMEOUT


async def test_parties_must_exist_when_the_spec_is_defined(db: Database, make_actor):
    alice = await make_actor("alice")
    spec = with_("roles.editor.static_parties", [alice.user_id, "usr_nope"])
    spec["roles"]["author"]["allowed_parties"] = ["grp_gone"]
    with pytest.raises(DomainError) as raised:
        async with db.transaction() as s:
            await workflows.define_workflow(s, actor=None, spec=spec)
    assert sorted((e.field[-2], e.message) for e in raised.value.errors) == [
        ("author", "Role 'author' names 'grp_gone', which is not a user or group."),
        ("editor", "Role 'editor' names 'usr_nope', which is not a user or group."),
    ]
    spec = with_("roles.editor.static_parties", [alice.user_id])
    async with db.transaction() as s:
        assert (await workflows.define_workflow(s, actor=None, spec=spec)).version == 1


def many(count: int, make: Any) -> dict[str, Any]:
    return {f"n{i}": make(i) for i in range(count)}


async def test_sizes_are_bounded(db: Database):
    too_many_states = with_("states", many(MAX_STATES + 1, lambda i: {}))
    too_many_actions = with_("actions", many(MAX_ACTIONS + 1, lambda i: {"always_enabled": True}))
    nested: dict[str, Any] = {"trigger": "workflow", "states": {"s0": {}}, "children": {}}
    level = nested
    for depth in range(MAX_CHILD_DEPTH + 1):
        child = {"trigger": "workflow", "states": {f"s{depth + 1}": {}}, "children": {}}
        level["children"][f"c{depth}"] = child
        level = child
    too_deep = with_("actions.nest", nested)
    # 30 always-enabled actions in 200 states: 6,000 edges of the diagram
    dense = with_("states", many(MAX_STATES, lambda i: {}))
    dense["actions"] = {"start": {"trigger": "init", "new_state": "n0"}} | many(30, lambda i: {"always_enabled": True})
    dense["actions"] = {f"a{k}": v for k, v in dense["actions"].items()}
    assert 30 * MAX_STATES > MAX_TRANSITIONS
    for spec, field, words in [
        (too_many_states, ["spec", "states"], "at most 200"),
        (too_many_actions, ["spec", "actions"], "at most 500"),
        (too_deep, None, "nest at most 4 levels deep"),
        (dense, ["spec", "actions"], "transitions"),
    ]:
        with pytest.raises(DomainError) as raised:
            async with db.transaction() as s:
                await workflows.define_workflow(s, actor=None, spec=spec)
        errors = raised.value.errors
        assert any(words in e.message and (field is None or e.field == field) for e in errors), errors


async def test_errors_of_one_spec_are_bounded(db: Database):
    spec = with_("actions", many(400, lambda i: {"assigned_role": [i]}))
    with pytest.raises(DomainError) as raised:
        async with db.transaction() as s:
            await workflows.define_workflow(s, actor=None, spec=spec)
    assert len(raised.value.errors) == MAX_ERRORS


def spec_errors(spec):
    """The INVALID_SPEC problems of a spec, as (path below spec, message)."""
    from engine.spec.workflows import parse_spec

    with pytest.raises(DomainErrors) as errors:
        parse_spec(spec)
    return [(e.field[1:], e.message) for e in errors.value.errors]


def test_the_spec_keys_of_outputs_are_checked():
    registry.register_on_fire("pick_first")(lambda execution: None)
    base = {"short_name": "s", "states": {"a": {}, "b": {}}}
    assert spec_errors(
        {**base, "actions": {"x": {"always_enabled": True, "on_fire": "nope", "outputs": {"go": "b"}}}}
    ) == [(["actions", "x", "on_fire"], "Action 'x' names unknown on_fire callback 'nope'.")]
    assert spec_errors(
        {**base, "actions": {"x": {"trigger": "auto", "enabled_states": ["a"], "outputs": {"go": "b"}}}}
    )[0][0] == ["actions", "x", "on_fire"]  # nobody would choose the output of an automatic action
    assert spec_errors(
        {**base, "actions": {"x": {"timeout_seconds": 60, "enabled_states": ["a"], "outputs": {"go": "b"}}}}
    )[0][0] == ["actions", "x", "on_fire"]  # nor of a timer's
    assert spec_errors(
        {**base, "actions": {"x": {"always_enabled": True, "new_state": "a", "outputs": {"go": "b"}}}}
    ) == [(["actions", "x", "new_state"], "Action 'x' has outputs, which decide its new state; drop new_state.")]
    assert spec_errors({**base, "actions": {"x": {"always_enabled": True, "on_fire": "pick_first"}}}) == [
        (["actions", "x", "on_fire"], "on_fire picks one of an action's outputs; 'x' declares none.")
    ]


def test_only_actions_a_person_executes_have_resolutions():
    spec = {
        "short_name": "s",
        "states": {"a": {}},
        "actions": {"x": {"trigger": "auto", "enabled_states": ["a"], "resolutions": {"ok": "OK"}}},
    }
    assert spec_errors(spec) == [
        (["actions", "x", "resolutions"], "Resolutions are picked by the person executing an action; 'x' is AUTO.")
    ]


def test_a_self_dependency_takes_no_min():
    spec = {
        "short_name": "gated",
        "states": {"open": {}},
        "actions": {"remind": {"always_enabled": True, "depends_on": {"remind": {"min": 1, "max": 3}}}},
    }
    assert spec_errors(spec)[0][0] == ["actions", "remind", "depends_on", "remind", "min"]


def test_unknown_enable_conditions_are_refused():
    spec = {
        "short_name": "s",
        "states": {"a": {}},
        "actions": {"x": {"always_enabled": True, "enable_conditions": ["nope"]}},
    }
    assert spec_errors(spec) == [
        (["actions", "x", "enable_conditions"], "Action 'x' names unknown enable condition 'nope'.")
    ]


def test_a_state_or_action_known_by_name_alone_has_the_names_a_spec_leaving_them_out_gets():
    """What insights says of a state or an action no version of its workflow defines (the log
    names it) is what the parser makes of one whose spec names nothing: its short name."""
    spec = workflows.parse_spec(
        {
            "short_name": "unnamed",
            "states": {"in_review": {}},
            "actions": {"start_review": {"enabled_states": ["in_review"]}},
        }
    )
    parsed, named = spec.actions["start_review"], ActionSpec.named("start_review")
    assert (named.pretty_name, named.pretty_past_tense) == (parsed.pretty_name, parsed.pretty_past_tense)
    assert named.pretty_past_tense == "start_review"
    assert StateSpec.named("in_review") == spec.states["in_review"]
