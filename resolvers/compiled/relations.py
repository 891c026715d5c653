"""The SQL forms of the parent pointers: a subproject's project, an item's subproject, a case's
item, a log entry's project, subproject and item, and a subproject's validator.

Each reads the one row the pointer names, if the viewer may see it, else null (hidden is the
same as missing, as the loaders answer: ``resolvers.tree_loads`` applies the same conditions
of ``resolvers.visibility``). A pointer's row is read under a fresh alias of its table
(``table.alias()``: SQLAlchemy names it ``subproject_1`` and so on when the statement is
compiled, unique within it), with the visibility condition adapted to the alias
(``ClauseAdapter``: the condition names the table's own columns, ``Subproject.id``). So a page
of items whose cards select ``subproject { id }`` reads the subproject under a name of its own
inside a statement that may read the subproject table itself around it (the board: a
subproject's page of items), and the planner starts its path check again below it
(``Form.fresh``, see ``plan._below``).
"""

from typing import Any

from sqlalchemy.sql.util import ClauseAdapter

from models import Activity, Case, Project, Subproject, WorkflowItem
from resolvers import visibility
from resolvers.compiled.build import Build
from resolvers.compiled.form import OBJECT, PARTIES, Form, party

__all__ = ["FORMS"]

_PROJECT, _SUBPROJECT, _ITEM = Project.__table__, Subproject.__table__, WorkflowItem.__table__
_CASE, _ACTIVITY = Case.__table__, Activity.__table__


def _parent(table: Any, visible: Any, pointer: str) -> Form:
    """The form of a pointer to a row of ``table`` held in the column ``pointer`` of the row
    the field is on: that row, read under a fresh alias, when ``visible`` (a rule of
    ``resolvers.visibility``) admits it for the viewer, else null (a null pointer finds none)."""

    def build(b: Build, source: Any, field: Any) -> Any:
        row = table.alias()
        condition = ClauseAdapter(row).traverse(visible(b.actor))
        return b.one(field.sub, row, "id", source.c[pointer], (condition,))

    return Form(OBJECT, build, table.name, fresh=True)


def _validator(b: Build, source: Any, field: Any) -> Any:
    """The user or group a subproject names as its validator: null when none, or gone (no
    visibility rule: the loader reads any party by id)."""
    return b.json.nested(party(b, field.sub, source.c.validator_id))


_PROJECT_OF = _parent(_PROJECT, visibility.project_visible, "project_id")
_SUBPROJECT_OF = _parent(_SUBPROJECT, visibility.subproject_visible, "subproject_id")

FORMS: dict[str, dict[str, Form]] = {
    "Subproject": {"project": _PROJECT_OF, "validator": Form(PARTIES, _validator, "party")},
    "WorkflowItem": {"subproject": _SUBPROJECT_OF},
    "Case": {"workflowItem": _parent(_ITEM, visibility.item_visible, "object_id")},
    "Activity": {  # a log entry's resources: any of them may be null, or hidden from the viewer
        "project": _PROJECT_OF,
        "subproject": _SUBPROJECT_OF,
        "workflowItem": _parent(_ITEM, visibility.item_visible, "workflow_item_id"),
    },
}
