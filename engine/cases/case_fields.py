"""Case fields at run time: checking the values an action sets, keeping them on the case, and
leaving out the ones a reader may not see (docs/workflows.md, "Fields and rules").

Why one module: the rule of what a value may be, what a change logs and who sees which field is
read by the write path (``engine.cases.execute``), the rules (``engine.cases.case_rules``) and
every read (``resolvers.cases``), so each rule is written once.
"""

import math
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import bindparam, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, DomainErrors, ErrorCode
from engine.spec.field_specs import MAX_FIELDS, MAX_NUMBER, FieldSpec
from engine.spec.specs import ActionSpec, WorkflowSpec
from models import Group, User

__all__ = ["apply", "cel_values", "check_changes", "hidden_names", "visible", "visible_log_data"]

# Built once: the union and its two IN clauses were built anew at each change that sets a user.
_PARTIES = union_all(
    select(User.id).where(User.id.in_(bindparam("parties", expanding=True))),
    select(Group.id).where(Group.id.in_(bindparam("parties", expanding=True))),
)
_DECIMALS = 2  # places of a money amount


async def check_changes(
    session: AsyncSession,
    *,
    spec: WorkflowSpec,
    action: ActionSpec,
    given: Any,
    current: dict[str, Any],
    currency: str | None,
) -> dict[str, dict[str, Any]]:
    """The changes ``given`` (executeAction's ``fields``) makes, ``{name: {from, to}}`` with the
    values as stored; raises DomainErrors with one INVALID_FIELD entry per bad field, so the
    action is refused and nothing changes."""
    errors: list[DomainError] = []
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise DomainError(ErrorCode.INVALID_FIELD, "fields must be an object of field values by name.", ["fields"])
    if len(given) > MAX_FIELDS:  # one error per name below: bounded, so the answer is too
        raise DomainError(
            ErrorCode.INVALID_FIELD, f"fields names at most {MAX_FIELDS} fields; this names {len(given):,}.", ["fields"]
        )
    values: dict[str, Any] = {}
    for name, value in given.items():
        field = spec.fields.get(name) if isinstance(name, str) else None
        if field is None:
            errors.append(_bad(str(name)[:64], "There is no field of that name."))
        elif name not in action.fields:
            errors.append(_bad(name, f"{field.label} is not a field {action.pretty_name} sets."))
        elif value is None:
            values[name] = None
        else:
            try:
                values[name] = _stored(field, value, currency)
            except ValueError as problem:
                errors.append(_bad(name, str(problem)))
    parties = {v for n, v in values.items() if v is not None and spec.fields[n].type == "user"}
    if parties:
        known = set(await session.scalars(_PARTIES, {"parties": sorted(parties)}))
        errors += [
            _bad(n, f"{spec.fields[n].label} names no user or group.")
            for n, v in values.items()
            if spec.fields[n].type == "user" and v is not None and v not in known  # other values may be unhashable
        ]
    merged = {**current, **values}
    wanted = [*action.required_fields, *(n for n in action.fields if spec.fields[n].required)]
    for name in dict.fromkeys(wanted):
        if merged.get(name) is None and not any(e.field == ["fields", name] for e in errors):
            errors.append(_bad(name, f"{spec.fields[name].label} is required."))
    if errors:
        raise DomainErrors(errors)
    return {
        name: {"from": current.get(name), "to": value} for name, value in values.items() if current.get(name) != value
    }


def apply(spec: WorkflowSpec, current: dict[str, Any], changes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The case's fields after ``changes``, in the spec's order (values no longer declared last)."""
    merged = {**current, **{name: change["to"] for name, change in changes.items()}}
    ordered = {name: merged[name] for name in spec.fields if merged.get(name) is not None}
    return ordered | {name: value for name, value in merged.items() if name not in ordered and value is not None}


def _bad(name: str, message: str) -> DomainError:
    return DomainError(ErrorCode.INVALID_FIELD, message, ["fields", name])


def _stored(field: FieldSpec, value: Any, currency: str | None) -> Any:
    """The value as the case keeps it; ValueError with a sentence when it is not one."""
    label, kind = field.label, field.type
    if kind in ("string", "text", "enum", "user", "date", "datetime") and not isinstance(value, str):
        raise ValueError(f"{label} must be a string.")
    if kind in ("string", "text"):
        if len(value) > (field.max_length or 0):
            raise ValueError(f"{label} is at most {field.max_length} characters.")
        if "\x00" in value:
            raise ValueError(f"{label} contains a NUL character.")
        if field.matcher is not None and field.matcher.fullmatch(value) is None:
            raise ValueError(f"{label} must match the pattern {field.pattern}.")
        return value
    if kind == "enum":
        codes = [code for code, _ in field.choices]
        if value not in codes:
            raise ValueError(f"{label} must be one of {', '.join(codes)}.")
        return value
    if kind == "user":
        if not 0 < len(value) <= 64:
            raise ValueError(f"{label} must be the id of a user or group.")
        return value
    if kind == "date":
        try:
            return date.fromisoformat(value).isoformat() if len(value) == 10 else _raise()
        except ValueError:
            raise ValueError(f"{label} must be a date such as 2026-12-31.") from None
    if kind == "datetime":
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise ValueError(f"{label} must be a date and time with its offset, such as 2026-12-31T17:00:00Z.")
        return moment.astimezone(UTC).isoformat()
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{label} must be true or false.")
        return value
    return _number(field, value, currency)


def _raise() -> str:
    raise ValueError


def _number(field: FieldSpec, value: Any, currency: str | None) -> Any:
    label, kind = field.label, field.type
    if kind == "money" and isinstance(value, str):
        try:
            amount = Decimal(value)
        except InvalidOperation:
            raise ValueError(f"{label} must be an amount such as 1250.50.") from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{label} must be {'a whole number' if kind == 'integer' else 'a number'}.")
    elif kind == "integer" and not isinstance(value, int):
        raise ValueError(f"{label} must be a whole number.")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{label} must be a finite number.")
    else:
        amount = Decimal(str(value))
    if not amount.is_finite() or abs(amount) > MAX_NUMBER:
        raise ValueError(f"{label} must be between -{MAX_NUMBER} and {MAX_NUMBER}.")
    if field.low is not None and amount < Decimal(str(field.low)):
        raise ValueError(f"{label} must be at least {field.low}.")
    if field.high is not None and amount > Decimal(str(field.high)):
        raise ValueError(f"{label} must be at most {field.high}.")
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value)
    if amount.as_tuple().exponent < -_DECIMALS:  # type: ignore[operator]
        raise ValueError(f"{label} has at most {_DECIMALS} decimal places.")
    return {"amount": f"{amount:.{_DECIMALS}f}", "currency": currency}


def cel_values(spec: WorkflowSpec, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields as a rule reads them: an amount is its number, a number a float."""
    values: dict[str, Any] = {}
    for name, value in fields.items():
        field = spec.fields.get(name)
        if field is None or value is None:
            continue
        if field.type == "money":
            values[name] = float(value["amount"])
        elif field.type == "number":
            values[name] = float(value)
        else:
            values[name] = value
    return values


def hidden_names(spec: WorkflowSpec, state: str | None, *, is_admin: bool, roles: set[str]) -> frozenset[str]:
    """The fields hidden from a reader of a case in ``state`` who plays ``roles`` in it: those the
    state's hidden_fields names, unless the reader is an admin or plays a role it names."""
    found = spec.states.get(state) if state is not None else None
    if found is None or not found.hidden_fields or is_admin or roles.intersection(found.hidden_visible_to):
        return frozenset()
    return frozenset(found.hidden_fields)


def visible(fields: dict[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    """The fields without the hidden ones (hidden is the same as missing)."""
    return fields if not hidden else {name: value for name, value in fields.items() if name not in hidden}


def visible_log_data(data: dict[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    """A log entry's data without the changes of hidden fields (``data.fields``)."""
    changes = data.get("fields")
    if not hidden or not isinstance(changes, dict) or hidden.isdisjoint(changes):
        return data
    return {key: visible(value, hidden) if key == "fields" else value for key, value in data.items()}
