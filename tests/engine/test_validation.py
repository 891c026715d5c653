"""engine/validation.py: the input checks every verb shares. Each refusal is INVALID_INPUT
naming its field with a sentence a client can show; each accepted value comes back in the form
that is stored (trimmed, upper-cased, de-duplicated)."""

import pytest

from engine import validation
from engine.errors import DomainError

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


def refusal(check, *args, **kwargs):
    with pytest.raises(DomainError) as error:
        check(*args, **kwargs)
    assert error.value.code == "INVALID_INPUT"
    return error.value.field, error.value.message


@pytest.mark.parametrize(
    ("check", "args", "kwargs", "field", "message"),
    [
        (validation.require_text, (None, "displayName"), {}, ["displayName"], "displayName must not be empty."),
        (validation.require_text, ("   ", "displayName"), {}, ["displayName"], "displayName must not be empty."),
        (
            validation.require_text,
            ("x" * 65, "login"),
            {"max_len": 64},
            ["login"],
            "login is longer than 64 characters.",
        ),
        (
            validation.optional_text,
            ("x" * 11, "comment"),
            {"max_len": 10},
            ["comment"],
            "comment is longer than 10 characters.",
        ),
        (validation.idempotency_key, (" ",), {}, ["idempotencyKey"], "idempotencyKey must not be empty."),
        (
            validation.idempotency_key,
            ("k" * (validation.MAX_IDEMPOTENCY_KEY + 1),),
            {},
            ["idempotencyKey"],
            f"idempotencyKey is longer than {validation.MAX_IDEMPOTENCY_KEY} characters.",
        ),
        (validation.bounded_list, ([1, 2, 3], "ids"), {"max_items": 2}, ["ids"], "ids has more than 2 items."),
        (validation.currency, ("EURO",), {}, ["currency"], "'EURO' is not an ISO 4217 currency code."),
        (
            validation.currency,
            (None, "budget.currency"),
            {},
            ["budget.currency"],
            "None is not an ISO 4217 currency code.",
        ),
        (validation.currency, ("XYZ",), {}, ["currency"], "'XYZ' is not an ISO 4217 currency code."),
        *[
            (
                validation.decimal_string,
                (value, "amount"),
                {},
                ["amount"],
                'amount must be a decimal number written as a string, like "1234.50".',
            )
            for value in ("1e3", "NaN", "Infinity", "1,5", "1.", ".5", "", None, " 12 3", "0x10")
        ],
        (validation.decimal_string, ("1" * 41, "amount"), {}, ["amount"], "amount has more than 40 characters."),
        (validation.decimal_string, ("0", "rate"), {"positive": True}, ["rate"], "rate must be greater than zero."),
        (validation.decimal_string, ("-0.01", "rate"), {"positive": True}, ["rate"], "rate must be greater than zero."),
        (validation.tags, (["ok", " "],), {}, ["tags"], "tags must not be empty."),
        (validation.tags, (["t" * 65],), {}, ["tags"], "tags is longer than 64 characters."),
        (
            validation.tags,
            ([f"t{i}" for i in range(validation.MAX_TAGS + 1)],),
            {},
            ["tags"],
            f"At most {validation.MAX_TAGS} tags.",
        ),
        (
            validation.json_object,
            ([1], "additionalData"),
            {},
            ["additionalData"],
            "additionalData must be a JSON object.",
        ),
        (
            validation.json_object,
            ("{}", "additionalData"),
            {},
            ["additionalData"],
            "additionalData must be a JSON object.",
        ),
    ],
)
def test_each_bad_value_is_refused_naming_its_field(check, args, kwargs, field, message):
    assert refusal(check, *args, **kwargs) == (field, message)


@pytest.mark.parametrize(
    ("check", "args", "kwargs", "expected"),
    [
        (validation.require_text, ("  Roof  ", "displayName"), {}, "Roof"),
        (validation.require_text, ("x" * 64, "login"), {"max_len": 64}, "x" * 64),  # at the limit
        (validation.optional_text, (None, "comment"), {}, ""),
        (validation.optional_text, ("x" * 10, "comment"), {"max_len": 10}, "x" * 10),
        (validation.idempotency_key, ("k" * validation.MAX_IDEMPOTENCY_KEY,), {}, "k" * validation.MAX_IDEMPOTENCY_KEY),
        (validation.bounded_list, ([1, 2], "ids"), {"max_items": 2}, [1, 2]),
        (validation.currency, (" eur ",), {}, "EUR"),
        (validation.currency, ("CHF",), {}, "CHF"),
        (validation.decimal_string, (" 1234.50 ", "amount"), {}, "1234.50"),
        (validation.decimal_string, ("-7", "amount"), {}, "-7"),
        (validation.decimal_string, ("+0.001", "rate"), {"positive": True}, "+0.001"),
        (validation.decimal_string, ("9" * 40, "amount"), {}, "9" * 40),
        (validation.tags, ([" edu ", "edu", "city"],), {}, ["edu", "city"]),  # trimmed, once each, in order
        (validation.tags, (None,), {}, []),
        (
            validation.tags,
            ([f"t{i}" for i in range(validation.MAX_TAGS)] * 2,),
            {},
            [f"t{i}" for i in range(validation.MAX_TAGS)],
        ),
        (validation.json_object, (None, "additionalData"), {}, {}),
        (validation.json_object, ({"a": [1]}, "additionalData"), {}, {"a": [1]}),
    ],
)
def test_each_good_value_comes_back_as_it_is_stored(check, args, kwargs, expected):
    assert check(*args, **kwargs) == expected
