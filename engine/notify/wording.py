"""How values read in words: money in its currency's minor units, dates in the reader's time
zone, lists of names, intents and notification levels by their meaning, a spec's pretty names.

Pure functions of values (no database): the sentences of log entries
(``engine/notify/sentences.py``) are built from them, and so may email and webhook bodies be,
so that a value reads alike wherever a person meets it."""

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any
from zoneinfo import ZoneInfo

# ISO 4217 minor units of the currencies that do not have two (engine/validation.py lists the
# codes accepted); the funds, metals and test codes with none ("N.A." in the standard) show as
# given.
_MINOR_UNITS: dict[str, int] = {
    **dict.fromkeys(
        "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(),
        0,
    ),
    **dict.fromkeys("BHD IQD JOD KWD LYD OMR TND".split(), 3),
    **dict.fromkeys("CLF UYW".split(), 4),
}
_NO_MINOR_UNITS = frozenset("XAG XAU XBA XBB XBC XBD XDR XPD XPT XSU XTS XUA XXX".split())


def minor_units(currency: str | None) -> int | None:
    """Decimal places of ``currency`` (2 for most; None: shown as stored)."""
    code = (currency or "").upper()
    if not code or code in _NO_MINOR_UNITS:
        return None
    return _MINOR_UNITS.get(code, 2)


def money(amount: Any, currency: str | None) -> str | None:
    """ "1,450.50 EUR", "1,450 JPY", "12.345 KWD": thousands grouped, the currency's minor units
    (never "1,450.5 EUR"); None without an amount."""
    if amount is None or amount == "":
        return None
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        return f"{amount} {currency or ''}".strip()
    places = minor_units(currency)
    if places is None:
        text = f"{value:,f}"
    else:
        text = f"{with_places(value, places):,.{places}f}"
    return f"{text} {currency or ''}".strip()


def with_places(value: Decimal, places: int) -> Decimal:
    """``value`` with exactly ``places`` decimals, however many digits it has: the default
    context's 28 digits would refuse an amount the API accepts (up to 40 characters)."""
    with localcontext() as context:
        context.prec = max(context.prec, len(value.as_tuple().digits) + places + 2)
        return value.quantize(Decimal(1).scaleb(-places))


def zone(name: str | None) -> ZoneInfo:
    """The IANA zone ``name``; UTC for none or one this machine does not know."""
    try:
        return ZoneInfo(name or "UTC")
    except (ValueError, KeyError, OSError):  # zoneinfo raises ZoneInfoNotFoundError (a KeyError)
        return ZoneInfo("UTC")


def day(value: date | str | None, *, today: date) -> str | None:
    """A date as people write it: "15 Dec", with its year when that is not ``today``'s
    ("15 Dec 2027"); a date given as ISO text is read first. None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = date.fromisoformat(value[:10])
        except ValueError:
            return value
    text = f"{value.day} {value.strftime('%b')}"
    return text if value.year == today.year else f"{text} {value.year}"


def local_day(instant: datetime | str | None, *, tz: ZoneInfo, today: date) -> str | None:
    """The day of an instant in the reader's zone ("26 Nov")."""
    moment = _instant(instant)
    return None if moment is None else day(moment.astimezone(tz).date(), today=today)


def local_time(instant: datetime | str | None, *, tz: ZoneInfo, today: date) -> str | None:
    """An instant in the reader's zone: "14:05" today, else "26 Nov 14:05"."""
    moment = _instant(instant)
    if moment is None:
        return None
    local = moment.astimezone(tz)
    clock = local.strftime("%H:%M")
    return clock if local.date() == today else f"{day(local.date(), today=today)} {clock}"


def _instant(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if value.tzinfo is None:  # naive means UTC, as everywhere
        value = value.replace(tzinfo=ZoneInfo("UTC"))
    return value


def joined(names: Iterable[str], *, empty: str = "nobody") -> str:
    """ "Alice", "Alice and Bob", "Alice, Bob and Carol"."""
    listed = list(names)
    if not listed:
        return empty
    if len(listed) == 1:
        return listed[0]
    return f"{', '.join(listed[:-1])} and {listed[-1]}"


def lower_first(text: str) -> str:
    """ "Approved" -> "approved" inside a sentence, but "QA approved" and "PDF sent" keep theirs."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


_INTENT_WORDS = {
    "view": "see",
    "viewHistory": "read the history of",
    "update": "edit",
    "assign": "assign",
    "close": "close",
    "createSubproject": "create subprojects in",
    "createWorkflowItem": "create items in",
    "reorderWorkflowItems": "reorder the items of",
    "intent.listPermissions": "list the permissions on",
    "intent.grantPermission": "grant permissions on",
    "intent.revokePermission": "revoke permissions on",
    "createProject": "create projects",
    "createUser": "create users",
    "createGroup": "create groups",
    "defineWorkflow": "define workflows",
}


def intent_words(intent: str | None) -> str:
    """What an intent lets one do, as a verb phrase ("grant permissions on"): never the API's
    ``project.intent.grantPermission``."""
    suffix = (intent or "").partition(".")[2]
    words = _INTENT_WORDS.get(suffix)
    if words is not None:
        return words
    return _spaced(suffix.rpartition(".")[2]) or "act on"


def _spaced(name: str) -> str:
    """ "grantPermission" -> "grant permission", "due_date" -> "due date"."""
    out = []
    for char in name.replace("_", " "):
        if char.isupper():
            out.append(" " + char.lower())
        else:
            out.append(char)
    return "".join(out).strip()


LEVEL_REASONS: dict[str, str] = {
    "ASSIGNED": "you are asked to act",
    "ROLE": "you play a role in it",
    "CASE": "you follow this item",
    "WORKFLOW": "you follow its subproject or workflow",
}
"""Why a notification of each level (engine/notify/notifications.py's ``LEVELS``) reached its
reader, in words."""


def level_reason(level: str | None) -> str | None:
    return None if level is None else LEVEL_REASONS.get(level, _spaced(level.lower()))


_FIELD_WORDS = {
    "displayName": "name",
    "description": "description",
    "dueDate": "due date",
    "assigneeId": "assignee",
    "amountType": "amount type",
    "amount": "amount",
    "currency": "currency",
    "exchangeRate": "exchange rate",
    "billingDate": "billing date",
    "rejectReason": "reason for rejection",
    "tags": "tags",
    "additionalData": "additional data",
    "status": "status",
    "validatorId": "validator",
    "projectedBudgets": "projected budgets",
    "workflowMode": "workflow mode",
}


def field_words(name: str) -> str:
    """A changed field of an item, subproject or project in words ("due date")."""
    return _FIELD_WORDS.get(name) or _spaced(name)


_AMOUNT_TYPES = {"N/A": "no amount", "ALLOCATED": "allocated", "DISBURSED": "disbursed"}


def amount_type_words(value: str | None) -> str:
    """ "ALLOCATED" -> "allocated", "N/A" -> "no amount"."""
    return _AMOUNT_TYPES.get(value or "", _spaced((value or "").lower()))


def status_words(value: str | None) -> str:
    """A status as a word: "OPEN" -> "open", "ACTIVE" -> "active"."""
    return (value or "").replace("_", " ").lower()


def pretty(names: Mapping[str, Any], short: str | None, *, default: str = "") -> str:
    """The pretty name of a spec's role, state or action (``names``: the spec's mapping), else
    the short name spaced ("start_review" -> "start review"), never None."""
    if not short:
        return default
    spec = names.get(short)
    name = getattr(spec, "pretty_name", None)
    return name if name else _spaced(short)


def resolution_words(action: Any, code: str | None) -> str | None:
    """A resolution's pretty name from its action's spec (``resolutions``), else its code."""
    if not code:
        return None
    named = dict(getattr(action, "resolutions", ()) or ())
    return named.get(code) or _spaced(code.lower())


__all__ = [
    "LEVEL_REASONS",
    "amount_type_words",
    "day",
    "field_words",
    "intent_words",
    "joined",
    "level_reason",
    "local_day",
    "local_time",
    "lower_first",
    "minor_units",
    "money",
    "pretty",
    "resolution_words",
    "status_words",
    "upper_first",
    "with_places",
    "zone",
]
