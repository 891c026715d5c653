"""Input checks shared by every verb: each failure is a DomainError naming its field."""

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

MAX_TEXT = 2000
MAX_TAGS = 50


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


def currency(value: str | None, field: str = "currency") -> str:
    code = (value or "").strip().upper()
    if code not in CURRENCIES:
        raise invalid(f"{value!r} is not an ISO 4217 currency code.", field)
    return code


def decimal_string(value: str | None, field: str, *, positive: bool = False) -> str:
    """A finite decimal written as a string (amounts never pass through floats)."""
    text = (value or "").strip()
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise invalid(f'{field} must be a decimal number written as a string, like "1234.50".', field) from None
    if not number.is_finite() or len(text) > 40:
        raise invalid(f"{field} must be a finite decimal number.", field)
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
