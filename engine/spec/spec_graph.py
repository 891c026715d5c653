"""A workflow spec as a graph, for the whole-spec checks (engine.spec.spec_analysis): which states
a case can reach, which actions can ever be enabled, and whether a parent can ever fire.

The graph over-approximates what can happen, so that a check built on it never refuses a
workflow that could work: enable conditions may always agree, gates may open, a role may
have players. What it does not assume is what the engine never does:

- an action moves its scope only from a state it is enabled in (``enabled_states``,
  ``assigned_states``, ``always_enabled``), to its ``new_state``, to one of its ``outputs``'
  states, or nowhere (it stays);
- an ``init`` action is never enabled and never counted as completed (gating counts enabled
  instances, and it has none): it only names where its scope starts;
- a parent fires only when its children let it (``engine.cases.quorum``): a child workflow that can
  reach a terminal state (or the state a ``complete_when`` condition counts, when the condition
  can hold with the children that can exist), children that can each complete, or its own timer;
- a gate ``{action: {min >= 1}}`` on an action that never runs never opens; nor do gates in a
  ring (each action gated on the next having completed: none can be first), nor a gate on an
  action of the same scope after which the case is never again where the gated one is enabled.

Each FSM scope (the top level, and each parent with ``states``) is a set of states with
edges; the children of a parent without states are enabled all at once, with it.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine.spec.child_specs import Condition
from engine.spec.spec_checker import MAX_INSTANCES
from engine.spec.specs import ActionSpec, WorkflowSpec

Scope = str | None  # None: the top level; else the parent action owning the scope


@dataclass(frozen=True, slots=True)
class Firing:
    """Whether a parent can fire by itself, and with which of its outputs."""

    can: bool
    outputs: frozenset[str] = frozenset()


@dataclass
class SpecGraph:
    """The spec's scopes, edges and the fixpoint of reachability and gating (see the module)."""

    spec: WorkflowSpec
    # FSM scopes: their states in spec order (the first is the default initial state)
    states: dict[Scope, list[str]] = field(default_factory=dict)
    # per FSM scope and state, the actions enabled there (init excluded)
    enabled_in: dict[Scope, dict[str, list[ActionSpec]]] = field(default_factory=dict)
    gated_dead: dict[str, str] = field(default_factory=dict)  # action -> why its gate never opens
    # action -> "ring" or "order": its gate on gated_dead[action] never opens though that one can run
    never_opens: dict[str, str] = field(default_factory=dict)
    reach: dict[Scope, set[str]] = field(default_factory=dict)
    live: set[str] = field(default_factory=set)  # actions some case can have enabled
    _firing: dict[str, Firing] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: WorkflowSpec) -> "SpecGraph":
        graph = cls(spec)
        graph._build()
        graph._settle()
        return graph

    # -- structure ---------------------------------------------------------------------------

    def _build(self) -> None:
        spec = self.spec
        for state in spec.states.values():
            self.states.setdefault(state.scope, []).append(state.short_name)
        for scope, names in self.states.items():
            table: dict[str, list[ActionSpec]] = {name: [] for name in names}
            for action in spec.scope_actions(scope):
                if action.trigger == "init":
                    continue
                for state in names if action.always_enabled else {*action.enabled_states, *action.assigned_states}:
                    table[state].append(action)
            self.enabled_in[scope] = table

    def is_fsm(self, scope: Scope) -> bool:
        return scope in self.states

    def owner_live(self, action: ActionSpec) -> bool:
        return action.parent is None or action.parent in self.live

    def initial(self, scope: Scope) -> str:
        return self.spec.initial_state(scope)

    def terminal(self, state: str) -> bool:
        return self.spec.states[state].terminal

    # -- firing and edges --------------------------------------------------------------------

    def firing(self, parent: ActionSpec) -> Firing:
        """Whether ``parent`` (an action with children) can fire, and with which outputs."""
        known = self._firing.get(parent.short_name)
        if known is None:
            known = self._firing[parent.short_name] = self._fire(parent)
        return known

    def _fire(self, parent: ActionSpec) -> Firing:
        every = frozenset(name for name, _ in parent.outputs)
        if parent.timeout_seconds is not None:  # its timer fires it, whatever its children do
            return Firing(True, every)
        name = parent.short_name
        if self.is_fsm(name):
            reached = self.reached(name)
            if parent.complete_when:
                held = frozenset(
                    c.output for c in parent.complete_when if c.state in reached and self.satisfiable(parent, c)
                )
                return Firing(bool(held), held)
            return Firing(any(self.terminal(s) for s in reached), every)
        members = [self.spec.actions[child] for child in parent.children]
        members = [m for m in members if m.trigger != "init"]
        return Firing(bool(members) and all(self.completes(m) for m in members), every)

    def completes(self, action: ActionSpec) -> bool:
        """Whether a child without states can complete: anyone (an admin at least) can execute
        it, its timer or AUTO trigger fires it; a parent, when it can fire."""
        return not action.children or self.firing(action).can

    def max_members(self, parent: ActionSpec) -> int:
        """How many child workflows (or instances) a parent's condition can count at most."""
        if parent.trigger == "workflow" or all(mapping == "per_role" for _, mapping in parent.for_each):
            return 1
        return MAX_INSTANCES

    def satisfiable(self, parent: ActionSpec, condition: Condition) -> bool:
        """Whether the condition can hold with the members the parent can have."""
        if condition.every:
            return True
        if not condition.whole:  # a fraction of the members: only "more than all" never holds
            return not (condition.strict and condition.quota >= 1)
        most = self.max_members(parent)
        return condition.quota < most if condition.strict else condition.quota <= most

    def targets(self, action: ActionSpec, state: str) -> list[str]:
        """Where firing ``action`` in ``state`` can lead ([] if it can never fire)."""
        if action.short_name in self.gated_dead:
            return []
        outputs: frozenset[str] | None = None
        if action.children:
            fires = self.firing(action)
            if not fires.can:
                return []
            outputs = fires.outputs
        if action.outputs:
            return [target for name, target in action.outputs if outputs is None or name in outputs]
        if action.routes:  # every route may be taken: the model checks follow each
            return list(action.route_targets())
        return [action.new_state or state]

    def edges(self, scope: Scope, *, without: str | None = None) -> dict[str, set[str]]:
        """Each state of an FSM scope, with the states its enabled actions lead to."""
        result: dict[str, set[str]] = {}
        for state, actions in self.enabled_in[scope].items():
            result[state] = {t for a in actions if a.short_name != without for t in self.targets(a, state)}
        return result

    def reached(self, scope: Scope) -> set[str]:
        """The states of an FSM scope a case (or child workflow) can be in, from its start."""
        known = self.reach.get(scope)
        if known is None:
            known = self.reach[scope] = _closure({self.initial(scope)}, self.edges(scope))
        return known

    def leads_to_terminal(self, scope: Scope, *, without: str | None = None) -> set[str]:
        """The states of an FSM scope from which a terminal state of it can be reached."""
        backwards: dict[str, set[str]] = defaultdict(set)
        for state, targets in self.edges(scope, without=without).items():
            for target in targets:
                backwards[target].add(state)
        return _closure({s for s in self.states[scope] if self.terminal(s)}, backwards)

    # -- the fixpoint ------------------------------------------------------------------------

    def _settle(self) -> None:
        """Reachability and gating depend on each other: an action gated on one that never runs
        never runs either. Recompute until no gate is found shut anew (a few rounds at most)."""
        while True:
            self.reach.clear()
            self._firing.clear()
            self.live = set()
            for action in self.spec.actions.values():  # parents come before their children
                if action.trigger != "init" and self._can_enable(action):
                    self.live.add(action.short_name)
            shut = {}
            for action in self.spec.actions.values():
                if action.short_name in self.gated_dead:
                    continue
                for dep, low, _ in action.depends_on:
                    if low >= 1 and dep != action.short_name and dep not in self.live:
                        shut[action.short_name] = dep
                        break
            if not shut:
                found = self._gates_never_open()
                self.never_opens.update({name: why for name, (_, why) in found.items()})
                shut = {name: dep for name, (dep, _) in found.items()}
            if not shut:
                return
            self.gated_dead.update(shut)

    def _gates_never_open(self) -> dict[str, tuple[str, str]]:
        """Live actions whose gate never opens although each action it names can be enabled:
        gated in a ring (A on B, B on A: neither completes first), or gated on an action of
        their scope after which the case never again reaches a state they are enabled in."""
        gates = {
            a.short_name: [dep for dep, low, _ in a.depends_on if low >= 1 and dep != a.short_name]
            for a in self.spec.actions.values()
            if a.short_name in self.live
        }
        opens: set[str] = set()
        while grown := {n for n, deps in gates.items() if n not in opens and all(d in opens for d in deps)}:
            opens |= grown
        found: dict[str, tuple[str, str]] = {}
        for name, deps in gates.items():
            ring = next((d for d in deps if d not in opens and name in _closure({d}, gates)), None)
            if name not in opens and ring is not None:
                found[name] = (ring, "ring")  # those gated on a ring, not in it, follow as DEAD_ACTION
            elif name in opens:
                late = next((d for d in deps if self._never_after(self.spec.actions[name], self.spec.actions[d])), None)
                if late is not None:
                    found[name] = (late, "order")
        return found

    def _never_after(self, action: ActionSpec, dep: ActionSpec) -> bool:
        """Whether, in their one FSM scope, no state ``action`` is enabled in can be reached
        once ``dep`` has fired (an action of another scope: not judged)."""
        scope = action.parent
        if dep.parent != scope or not self.is_fsm(scope):
            return False
        table, reached = self.enabled_in[scope], self.reached(scope)
        fired = {t for state in reached if dep in table[state] for t in self.targets(dep, state)}
        after = _closure(fired, self.edges(scope))
        return not any(action in table[state] for state in after)

    def _can_enable(self, action: ActionSpec) -> bool:
        if action.short_name in self.gated_dead or not self.owner_live(action):
            return False
        if not self.is_fsm(action.parent):  # a child of a parent without states: enabled with it
            return True
        reached = self.reached(action.parent)
        if action.always_enabled:
            return bool(reached)
        return any(s in reached for s in (*action.enabled_states, *action.assigned_states))


def _closure(start: set[str], edges: Mapping[str, Iterable[str]]) -> set[str]:
    seen = set(start)
    todo = list(start)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
