"""Workflow specs: parsed and validated (``specs``), checked and analysed (``spec_checker``,
``diagnostics``), drawn (``diagram``), stored and versioned (``workflows``, ``versions``), the
child workflows' rules (``child_specs``), and what a key the spec leaves out means
(``defaults``, which both read roads take their defaults from). A spec names job kinds, so
this wing sits above jobs; cases run what it defines. The model, the graph, the analysis and
the parts of an action's and a reminder's spec (``spec_model``, ``spec_graph``,
``spec_analysis``, ``action_specs``, ``reminder_specs``) are its own details;
``builtin_workflows/`` holds the YAML it ships.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "child_specs",
    "defaults",
    "diagnostics",
    "diagram",
    "field_specs",
    "rules",
    "spec_checker",
    "specs",
    "versions",
    "workflows",
]
