"""Input checks shared by every verb: each failure is a DomainError naming its field."""

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from engine.errors import DomainError, ErrorCode

# ISO 4217 active alphabetic codes.
CURRENCIES = frozenset(
    """AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD
    BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD
    EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR
    ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD
    MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR
    PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL
    THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF
    XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL""".split()
)

# The documented maxima of the verbs' inputs (docs/api.md, "Input limits"). The GraphQL layer has
# its own ceilings for every string, list and JSON value (schema/input_guard.py).
MAX_TEXT = 2000
MAX_TAGS = 50
MAX_COMMENT = 5000
MAX_IDEMPOTENCY_KEY = 200
MAX_ORDERING = 10_000
MAX_NOTIFICATION_IDS = 1000
_DECIMAL = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?")


def invalid(message: str, field: str) -> DomainError:
    return DomainError(ErrorCode.INVALID_INPUT, message, [field])


def require_text(value: str | None, field: str, *, max_len: int = 200) -> str:
    """A non-blank, trimmed string of bounded length."""
    text = (value or "").strip()
    if not text:
        raise invalid(f"{field} must not be empty.", field)
    if len(text) > max_len:
        raise invalid(f"{field} is longer than {max_len} characters.", field)
    return text


def optional_text(value: str | None, field: str, *, max_len: int = MAX_TEXT) -> str:
    text = value or ""
    if len(text) > max_len:
        raise invalid(f"{field} is longer than {max_len} characters.", field)
    return text


def idempotency_key(value: str) -> str:
    """A client's key for replaying a request: non-empty, at most MAX_IDEMPOTENCY_KEY characters."""
    if not value.strip():
        raise invalid("idempotencyKey must not be empty.", "idempotencyKey")
    if len(value) > MAX_IDEMPOTENCY_KEY:
        raise invalid(f"idempotencyKey is longer than {MAX_IDEMPOTENCY_KEY} characters.", "idempotencyKey")
    return value


def bounded_list(values: list[Any], field: str, *, max_items: int) -> list[Any]:
    if len(values) > max_items:
        raise invalid(f"{field} has more than {max_items} items.", field)
    return values


def currency(value: str | None, field: str = "currency") -> str:
    code = (value or "").strip().upper()
    if code not in CURRENCIES:
        raise invalid(f"{value!r} is not an ISO 4217 currency code.", field)
    return code


def decimal_string(value: str | None, field: str, *, positive: bool = False) -> str:
    """A decimal written as a string in plain notation, at most 40 characters (amounts never pass
    through floats; "1e999999999" or "NaN" would pass Decimal() and then break the sums)."""
    text = (value or "").strip()
    if _DECIMAL.fullmatch(text) is None:
        raise invalid(f'{field} must be a decimal number written as a string, like "1234.50".', field)
    if len(text) > 40:
        raise invalid(f"{field} has more than 40 characters.", field)
    try:
        number = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        raise invalid(f"{field} must be a finite decimal number.", field) from None
    if positive and number <= 0:
        raise invalid(f"{field} must be greater than zero.", field)
    return text


def tags(value: list[str] | None, field: str = "tags") -> list[str]:
    result: list[str] = []
    for tag in value or []:
        text = require_text(tag, field, max_len=64)
        if text not in result:
            result.append(text)
    if len(result) > MAX_TAGS:
        raise invalid(f"At most {MAX_TAGS} tags.", field)
    return result


def json_object(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(f"{field} must be a JSON object.", field)
    return value
