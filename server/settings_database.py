"""The database settings (server/settings.py joins them): where the database is, and behind
a pooler or with replicas, where its primary and replicas are (docs/scaling.md)."""

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from models import normalize_url


def _require_postgres(url: str, *, many: bool = False) -> None:
    """Refused at start, in one sentence (the URL itself not repeated: it may hold a password)."""
    try:
        backend = make_url(normalize_url(url)).get_backend_name()
    except (ArgumentError, ValueError):
        backend = None
    if backend != "postgresql":
        what = "are PostgreSQL URLs, comma-separated" if many else "is not a PostgreSQL URL"
        raise ValueError(f"{what}: write postgresql://user@host:5432/dbname")


class DatabaseSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASEWAY_")

    database_url: str = Field(
        "sqlite:///./caseway.db",
        description="`sqlite:///path` or `postgresql://user@host:port/db`",
    )
    # PostgreSQL itself when CASEWAY_DATABASE_URL points at PgBouncer in transaction pooling: the
    # event hub's LISTEN and migrations need a session of their own (docs/scaling.md).
    database_direct_url: str | None = Field(
        None,
        description=(
            "PostgreSQL itself, when `CASEWAY_DATABASE_URL` points at PgBouncer in transaction pooling: the event "
            "hub's `LISTEN` and migrations use it ([docs/scaling.md](docs/scaling.md))"
        ),
    )
    # Streaming replicas of the primary, comma-separated URLs: an HTTP request's reads go to one
    # that has replayed the reader's last write (models/replicas.py; docs/scaling.md).
    database_replica_urls: str = Field(
        "",
        description=(
            "streaming replicas of the primary, comma-separated: an HTTP request's reads go to one that has "
            "replayed the reader's last write ([docs/scaling.md](docs/scaling.md#read-replicas))"
        ),
    )
    replica_max_lag_ms: int = Field(
        default=1000,
        ge=0,
        le=3_600_000,
        description="milliseconds: a replica further behind the primary than this is not read from",
    )

    @field_validator("database_url")
    @classmethod
    def _a_database_caseway_speaks(cls, url: str) -> str:
        """Refused at start, in one sentence: a URL that does not parse, or names a database
        other than SQLite and PostgreSQL (whose driver would be missing)."""
        try:
            backend = make_url(normalize_url(url)).get_backend_name()
        except (ArgumentError, ValueError):
            raise ValueError(
                "is not a database URL: write sqlite:///path/to/caseway.db or postgresql://user@host:5432/dbname"
            ) from None
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(
                f"names {backend}, which Caseway does not support: use sqlite:///path/to/caseway.db or "
                "postgresql://user@host:5432/dbname"
            )
        return url

    @field_validator("database_direct_url")
    @classmethod
    def _a_postgres_url(cls, url: str | None) -> str | None:
        if url is not None:
            _require_postgres(url)
        return url

    @field_validator("database_replica_urls")
    @classmethod
    def _postgres_replicas(cls, urls: str) -> str:
        for url in (u.strip() for u in urls.split(",")):
            if url:
                _require_postgres(url, many=True)
        return urls

    @property
    def replica_urls(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in self.database_replica_urls.split(",") if u.strip())

    @model_validator(mode="after")
    def _replicas_are_postgres_replicas(self) -> "DatabaseSettings":
        if self.replica_urls and not normalize_url(self.database_url).startswith("postgresql"):
            raise ValueError("CASEWAY_DATABASE_REPLICA_URLS are PostgreSQL replicas: CASEWAY_DATABASE_URL names SQLite")
        return self

    @model_validator(mode="after")
    def _direct_url_is_postgres(self) -> "DatabaseSettings":
        """A direct URL is the PostgreSQL behind a pooler: beside a SQLite database it means nothing."""
        if self.database_direct_url and not normalize_url(self.database_url).startswith("postgresql"):
            raise ValueError(
                "CASEWAY_DATABASE_DIRECT_URL is for PostgreSQL behind PgBouncer: CASEWAY_DATABASE_URL names SQLite"
            )
        return self
