"""Column types shared by all tables."""

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware UTC datetimes; SQLite drops the zone, so it is put back on the way out."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        value = as_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        """None on PostgreSQL: asyncpg already returns aware UTC datetimes, and a nested read
        converts thousands of them (R1: 2,400 per request) for nothing."""
        if dialect.name == "postgresql":
            return self.impl_instance.result_processor(dialect, coltype)
        return super().result_processor(dialect, coltype)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return as_utc(value)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """The instant in UTC; a time without an offset is taken as UTC, as every stored time is.
    Raises OverflowError for an instant outside the years 1 to 9999 in UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONType = JSON().with_variant(JSON(none_as_null=True), "postgresql")
