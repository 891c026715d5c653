"""The checks only the whole spec shows (docs/workflows.md, "Checks at definition"): a state no
case reaches, a state a case never leaves for a terminal one, an action never enabled, a gate
or quorum that can never be met, automatic actions that fire each other forever, a timer that
starts over by itself, a role nobody fills.

They judge new definitions only (``engine.spec.workflows.define``, ``validateWorkflow``, ``caseway
check-workflow``): a workflow stored before a check existed keeps loading and running, since
reading a stored spec parses it (``engine.spec.specs``) without asking this module.

Each finding is an ERROR only when it is certain from the spec alone (``engine.spec.spec_graph``
assumes whatever could still happen does); the rest are WARNINGs.
"""

from engine.spec.diagnostics import Diagnostic, finding
from engine.spec.spec_graph import Scope, SpecGraph
from engine.spec.specs import ActionSpec, RoleSpec, WorkflowSpec


def analyze(spec: WorkflowSpec) -> list[Diagnostic]:
    """Every finding about a spec that parsed (``engine.spec.specs.parse``), in a stable order."""
    graph = SpecGraph.of(spec)
    return [
        *_unreachable_states(graph),
        *_dead_actions(graph),
        *_no_path_to_terminal(graph),
        *_unsatisfiable_guards(graph),
        *_auto_loops(graph),
        *_timers_that_repeat(graph),
        *_roles_never_filled(graph),
    ]


def action_path(spec: WorkflowSpec, action: ActionSpec) -> tuple[str, ...]:
    if action.parent is None:
        return ("actions", action.short_name)
    return (*action_path(spec, spec.actions[action.parent]), "children", action.short_name)


def state_path(spec: WorkflowSpec, state: str) -> tuple[str, ...]:
    scope = spec.states[state].scope
    return ("states", state) if scope is None else (*action_path(spec, spec.actions[scope]), "states", state)


def _names(names: list[str] | set[str] | tuple[str, ...]) -> str:
    return ", ".join(repr(n) for n in names)


def _live_scopes(graph: SpecGraph) -> list[Scope]:
    """The FSM scopes some case can run: the top level, and those of parents that can be enabled."""
    return [scope for scope in graph.states if scope is None or scope in graph.live]


def _unreachable_states(graph: SpecGraph) -> list[Diagnostic]:
    found = []
    for scope in _live_scopes(graph):
        reached = graph.reached(scope)
        start = graph.initial(scope)
        for state in graph.states[scope]:
            if state not in reached:
                found.append(
                    finding(
                        "UNREACHABLE_STATE",
                        state_path(graph.spec, state),
                        f"State {state!r} is never reached: no action leads there from {start!r}, where "
                        f"{'a case' if scope is None else f'the child workflow of {scope!r}'} starts.",
                        f"Give an action enabled in a state cases reach the new_state (or an output) {state!r}, "
                        "or remove the state.",
                    )
                )
    return found


def _dead_actions(graph: SpecGraph) -> list[Diagnostic]:
    spec, found = graph.spec, []
    for action in spec.actions.values():
        name = action.short_name
        if action.trigger == "init" or name in graph.live or not graph.owner_live(action):
            continue  # a parent never enabled is reported, not each of its children
        if name in graph.never_opens:
            continue  # GUARD_UNSATISFIABLE says why (_gates_never_open)
        states = (*action.enabled_states, *action.assigned_states)
        gate = graph.gated_dead.get(name)
        if gate is not None:
            why = f"it is gated on {gate!r} having completed, and {gate!r} never does" + (
                " (an init action is never counted)" if spec.actions[gate].trigger == "init" else ""
            )
            hint = f"Gate it on an action that runs, or drop depends_on.{gate}."
        elif not states and not action.always_enabled:
            why = "it names no state to be enabled in"
            hint = "Give it enabled_states, assigned_states or always_enabled: true."
        else:
            why = f"it is enabled only in {_names(states)}, which no case reaches"
            hint = "Enable it in a state cases reach, or make one of those states reachable."
        found.append(finding("DEAD_ACTION", action_path(spec, action), f"Action {name!r} can never run: {why}.", hint))
    return found


def _terminal_scopes(graph: SpecGraph) -> list[Scope]:
    """The FSM scopes whose cases (or child workflows) must reach a terminal state: the top
    level, and child workflows that no complete_when decides."""
    return [s for s in _live_scopes(graph) if s is None or not graph.spec.actions[s].complete_when]


def _no_path_to_terminal(graph: SpecGraph) -> list[Diagnostic]:
    spec, found = graph.spec, []
    for scope in _terminal_scopes(graph):
        if not any(graph.terminal(s) for s in graph.states[scope]):
            if scope is None:
                found.append(
                    finding(
                        "NO_PATH_TO_TERMINAL",
                        ("states",),
                        "No state is terminal, so no case of this workflow can ever complete.",
                        "Mark the state a case ends in terminal: true.",
                    )
                )
            else:  # a workflow parent's is refused while parsing; a dynamic one's lands here
                found.append(
                    finding(
                        "NO_PATH_TO_TERMINAL",
                        (*action_path(spec, spec.actions[scope]), "states"),
                        f"The child workflows of {scope!r} have no terminal state, so {scope!r} never fires.",
                        "Mark one of its states terminal, or add complete_when.",
                    )
                )
            continue
        good = graph.leads_to_terminal(scope)
        for state in graph.states[scope]:
            if state in graph.reached(scope) and state not in good:
                whose = "a case" if scope is None else f"a child workflow of {scope!r}"
                found.append(
                    finding(
                        "NO_PATH_TO_TERMINAL",
                        state_path(spec, state),
                        f"From state {state!r} no terminal state can be reached: {whose} that gets there "
                        "never completes.",
                        f"Enable an action in {state!r} that leads on towards a terminal state, or mark "
                        f"{state!r} terminal.",
                    )
                )
    return found


def _unsatisfiable_guards(graph: SpecGraph) -> list[Diagnostic]:
    spec, found = graph.spec, []
    for action in spec.actions.values():
        path = action_path(spec, action)
        if action.short_name not in graph.live:
            continue
        for condition in action.complete_when:
            if not graph.satisfiable(action, condition):
                wanted = {k: v for k, v in condition.describe().items() if k in ("at_least", "more_than")}
                has = f"at most {graph.max_members(action)}" if condition.whole else "no more than all of them"
                found.append(
                    finding(
                        "GUARD_UNSATISFIABLE",
                        (*path, "complete_when", condition.output),
                        f"Condition {condition.output!r} of {action.short_name!r} can never hold: it needs "
                        f"{_quota(wanted)} of its child workflows in {condition.state!r}, and it has {has}.",
                        'Lower the count, or count a fraction of them ("2/3").',
                    )
                )
        if action.trigger == "dynamic":
            found += _empty_fan_out(graph, action, path)
    return found + _gates_never_open(graph)


def _gates_never_open(graph: SpecGraph) -> list[Diagnostic]:
    """Gates in a ring, and gates on an action after which the gated one is never enabled
    again (engine.spec.spec_graph): the gated action can never run."""
    spec, found = graph.spec, []
    for name, why in graph.never_opens.items():
        action, dep = spec.actions[name], graph.gated_dead[name]
        if why == "ring":
            because = f"{dep!r} can complete only after {name!r} has (through its own depends_on), so neither is first"
            hint = f"Drop one gate of the ring, e.g. depends_on.{dep} of {name!r}."
        else:
            states = (
                "every state" if action.always_enabled else _names([*action.enabled_states, *action.assigned_states])
            )
            because = f"once {dep!r} has completed, no case comes back to {states}, where {name!r} is enabled"
            hint = f"Enable {name!r} in a state a case reaches after {dep!r}, or drop depends_on.{dep}."
        found.append(
            finding(
                "GUARD_UNSATISFIABLE",
                (*action_path(spec, action), "depends_on", dep),
                f"Action {name!r} can never run: it is gated on {dep!r} having completed, and {because}.",
                hint,
            )
        )
    return found


def _quota(wanted: dict[str, object]) -> str:
    return " ".join(f"{key.replace('_', ' ')} {value}" for key, value in wanted.items())


def _empty_fan_out(graph: SpecGraph, action: ActionSpec, path: tuple[str, ...]) -> list[Diagnostic]:
    """A dynamic parent over a role that may have nobody makes no child and never fires by
    itself (engine.cases.quorum): an error when nothing else leads its scope on to a terminal state."""
    spec = graph.spec
    empty = [(role, m) for role, m in action.for_each if m != "per_role" and not _always_filled(spec.roles[role], m)]
    scope = action.parent
    if not empty or action.timeout_seconds is not None or scope not in _terminal_scopes(graph):
        return []
    stuck_without = graph.leads_to_terminal(scope, without=action.short_name)
    reached, good = graph.reached(scope), graph.leads_to_terminal(scope)
    stuck = [s for s in graph.states[scope] if s in reached and s in good and s not in stuck_without]
    stuck = [s for s in stuck if action.always_enabled or s in (*action.enabled_states, *action.assigned_states)]
    if not stuck:
        return []
    role, mapping = empty[0]
    return [
        finding(
            "GUARD_UNSATISFIABLE",
            (*path, "for_each"),
            f"Dynamic action {action.short_name!r} makes one child per {mapping.removeprefix('per_')} of role "
            f"{role!r}, whose defaults may name nobody; with nobody it has no children and never fires, and "
            f"nothing else leads from {stuck[0]!r} to a terminal state.",
            f"Give {role!r} a default that always names someone (creation_user, static_parties), give "
            f"{action.short_name!r} a timeout_seconds, or enable another way out of {stuck[0]!r}.",
        )
    ]


def _always_filled(role: RoleSpec, mapping: str) -> bool:
    """Whether the role's defaults name someone in every case (the first callback with an
    answer wins): the item's creator, or static parties (a user among them, for per_user: a
    group may have no members). Anything else may answer nobody."""
    sources = role.callbacks or (("static",) if role.static_parties else ())
    for source in sources:
        if source == "creation_user" and not role.allowed_parties:
            return True
        if source == "static" and role.static_parties:
            if all(p in role.allowed_parties for p in role.static_parties) or not role.allowed_parties:
                if mapping == "per_member" or any(p.startswith("usr_") for p in role.static_parties):
                    return True
    return False


def _immediate(action: ActionSpec) -> bool:
    return action.trigger == "auto" or action.timeout_seconds == 0


def _firing_now(graph: SpecGraph, scope: Scope, state: str) -> list[ActionSpec]:
    """The AUTO and zero-second timer actions that fire as soon as the case is in ``state``."""
    return [a for a in graph.enabled_in[scope][state] if _immediate(a) and graph.targets(a, state)]


def _auto_loops(graph: SpecGraph) -> list[Diagnostic]:
    """States in which an AUTO (or zero-second timer) action with no gate or condition is
    always enabled, and from which every such action leads back among them: the case never
    stops firing (WORKFLOW_LOOP after 100 steps)."""
    spec, found = graph.spec, []
    for scope in _live_scopes(graph):
        looping = {
            s
            for s in graph.reached(scope)
            if any(not a.depends_on and not a.enable_conditions for a in _firing_now(graph, scope, s))
        }
        changed = True
        while changed:  # keep the states none of whose automatic actions leads out of the set
            changed = False
            for state in list(looping):
                if any(t not in looping for a in _firing_now(graph, scope, state) for t in graph.targets(a, state)):
                    looping.discard(state)
                    changed = True
        if not looping:
            continue
        states = [s for s in graph.states[scope] if s in looping]
        culprits = [
            a for s in states for a in _firing_now(graph, scope, s) if not a.depends_on and not a.enable_conditions
        ]
        first = min(culprits, key=lambda a: list(spec.actions).index(a.short_name))
        names = _names(sorted({a.short_name for a in culprits}))
        found.append(
            finding(
                "AUTO_LOOP",
                action_path(spec, first),
                f"Automatic actions fire forever in {_names(states)}: {names} "
                f"{'fires by itself and leads' if len(culprits) == 1 else 'fire by themselves and lead'} back "
                "there (a case stops with WORKFLOW_LOOP after 100 steps).",
                f"Give {first.short_name!r} a new_state outside the loop, or cap it: "
                f"depends_on: {{{first.short_name}: {{max: 1}}}}.",
            )
        )
    return found


def _timers_that_repeat(graph: SpecGraph) -> list[Diagnostic]:
    spec, found = graph.spec, []
    for action in spec.actions.values():
        if not action.timeout_seconds or action.short_name not in graph.live or not graph.is_fsm(action.parent):
            continue
        if any(dep == action.short_name and high is not None for dep, _, high in action.depends_on):
            continue  # capped: it runs at most max times
        reached = graph.reached(action.parent)
        again = next(
            (
                target
                for state in graph.states[action.parent]
                if state in reached and action in graph.enabled_in[action.parent][state]
                for target in graph.targets(action, state)
                # a terminal state completes the case, and a completed case's timers do not run
                if action.is_enabled_in(target) and not (action.parent is None and graph.terminal(target))
            ),
            None,
        )
        if again is not None:
            found.append(
                finding(
                    "TIMER_REPEATS",
                    action_path(spec, action),
                    f"Action {action.short_name!r} fires by its timer and leaves the case in {again!r}, where it "
                    f"is enabled again: it fires every {action.timeout_seconds} seconds (at most once per "
                    "CASEWAY_TIMER_MIN_INTERVAL, 60 by default) until something else moves the case on.",
                    f"Give it a new_state where it is not enabled, or cap it: "
                    f"depends_on: {{{action.short_name}: {{max: 1}}}}.",
                )
            )
    return found


def _roles_never_filled(graph: SpecGraph) -> list[Diagnostic]:
    spec, found = graph.spec, []
    for action in spec.actions.values():
        role = spec.roles.get(action.assigned_role or "")
        if role is None or action.short_name not in graph.live:
            continue
        if role.callbacks or role.static_parties or role.assignable_by:
            continue
        found.append(
            finding(
                "ROLE_NEVER_FILLED",
                (*action_path(spec, action), "assigned_role"),
                f"Action {action.short_name!r} is assigned to role {role.short_name!r}, which nothing fills: it has "
                "no callbacks, static_parties or assignable_by, so only a reassignRole by hand gives it players.",
                f"Give {role.short_name!r} callbacks (e.g. item_assignee) or static_parties.",
            )
        )
    return found
