"""Settings, read from CASEWAY_* environment variables by every command alike."""

from pathlib import Path
from typing import Any, Literal

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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASEWAY_")

    database_url: str = "sqlite:///./caseway.db"
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
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    # Addresses of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto `caseway serve`
    # believes (comma-separated, or "*"); empty: none, so no local process can choose the client
    # address the login throttle counts.
    forwarded_allow_ips: str = ""
    workers: int = 1
    token_ttl: int = 30 * 24 * 3600  # seconds a login token stays valid
    workflows_dir: Path | None = None  # extra workflow spec files defined at startup
    graphiql: bool = True
    # "text", or "json": every server log line one JSON object (server/access_log.py)
    log_format: Literal["text", "json"] = "text"
    web_dir: Path | None = None  # the built dashboard and GraphiQL (server/web.py); default: web/dist
    db_pool_size: int = 10
    legacy_ws: bool = False  # also accept the old `graphql-ws` subscription protocol
    ws_init_timeout: float = 10.0  # seconds a WebSocket may take to send connection_init
    ws_max_subscriptions: int = 100  # per connection
    ws_max_operations: int = 10  # queries and mutations running at once on one connection
    # Other origins whose pages may open a WebSocket (same-origin and non-browser clients always
    # may); ["*"] allows any.
    allowed_origins: list[str] = []
    hub_poll_interval: float = 5.0  # seconds between safety-net reads of the log
    # Whether `caseway serve` sweeps due timers; false leaves them to the other server processes
    # (or to `caseway run-due-timers`).
    run_timers: bool = True
    timer_poll_interval: float = 10.0  # seconds between safety-net sweeps of due timers (server/sweeper.py)
    # seconds an HTTP request's bearer token is remembered (server/actor_cache.py); 0: never
    auth_cache_seconds: float = 10.0
    ws_auth_refresh: float = 30.0  # seconds between re-checks of a live connection's token and groups

    # --- Bounded work per request (schema/limits/, server/request_limits.py; docs/api.md "Request limits") ---
    max_body_bytes: int = 1_000_000  # a request body larger than this is refused with 413
    max_query_tokens: int = 2_000  # tokens in one GraphQL document; parsing 5,000 took ~36 ms here (bench A1)
    # characters of one GraphQL document, comments and whitespace included: the parser reads each
    # one (a 990 KB comment held the server 604 ms; 100,000 characters take ~20 ms)
    max_query_chars: int = 100_000
    max_query_depth: int = 15  # nested selections, fragments followed
    max_aliases: int = 50  # aliased fields in one document
    max_query_cost: int = 50_000  # nodes a query may ask for, from the `first` arguments along each path
    operation_timeout: float = 10.0  # seconds a query or mutation may run, HTTP or WebSocket, before it is stopped
    # Queries whose root field the read planner can compile are answered by one SQL statement
    # that builds their JSON (resolvers/compiled); false: every field through its resolver.
    compiled_reads: bool = True

    # --- Logins and tokens (engine/people/throttle.py) ---
    login_free_failures: int = 5  # failed logins per login name or address before any delay
    login_max_delay: float = 2.0  # seconds, the longest delay of a failed login's answer
    login_lockout_failures: int = 20  # failures of one login name from one address that lock the two
    login_address_lockout_failures: int = 100  # failures from one address (any names) that lock it
    login_lockout_seconds: int = 900  # how long a lock lasts
    # password checks queued or running at once per process; more are refused at once (scrypt
    # takes ~0.13 s of one core here: 16 is about 2 s of work)
    login_max_password_checks: int = 16

    # --- Verifiable history (engine/history/history.py) ---
    # HMAC key for signed checkpoints of the activity hash chains; never stored in the database.
    # Empty: no checkpoints are signed, and verification checks the hash chains alone.
    secret_key: str = ""
    checkpoint_interval: float = 60.0  # seconds between checkpoint passes of a server process

    # --- Jobs (engine/jobs, server/job_runner.py; docs/workflows.md "Webhook jobs") ---
    # Webhook endpoints spec authors may name: {"billing": {"url": "https://...", "secret": "...",
    # "timeout": 10, "serialize_by": "case"}} (serialize_by: case, endpoint or none).
    webhooks: dict[str, Any] = {}
    # Retry policy per job kind, replacing the kind's own: {"webhook": {"max_attempts": 8,
    # "initial_delay": 1, "multiplier": 2, "max_delay": 60, "jitter": true}}.
    job_retry: dict[str, Any] = {}
    run_jobs: bool = True  # whether `caseway serve` runs jobs; false leaves them to `caseway run-jobs`
    job_concurrency: int = 32  # jobs one process runs at once
    job_poll_interval: float = 5.0  # seconds between safety-net looks for due jobs

    # --- Email (engine/notify/mail.py, engine/notify/delivery.py; docs/api.md "Email and digests") ---
    # The SMTP server notifications are emailed through: smtp://[user:password@]host:port (STARTTLS
    # when offered) or smtps://...; empty: no email. Needs secret_key (it signs unsubscribe links).
    smtp_url: str = ""
    mail_from: str = "Caseway <caseway@localhost>"  # the From of every email
    public_url: str = ""  # where people reach this server, for links in emails; default http://host:port

    # --- Documents (engine/documents; docs/api.md "Documents") ---
    # Where document bytes are stored (content-addressed); default: caseway-documents/ next to
    # the SQLite database file, or in the working directory for PostgreSQL.
    documents_dir: Path | None = None
    # One uploaded file; larger is refused (TOO_LARGE). At most 2 GiB - 1: Document.size is a GraphQL Int.
    max_document_bytes: int = Field(default=25 * 1024 * 1024, gt=0, le=2**31 - 1)
    # "local" (the directory above) or "s3": an S3-compatible bucket, for servers on several
    # machines (engine/documents/s3.py; the s3 extra). Region and credentials: the standard AWS
    # variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION) or an instance role.
    documents_store: Literal["local", "s3"] = "local"
    s3_bucket: str = ""  # the bucket's name; needed by the s3 store
    s3_endpoint_url: str = ""  # another S3-compatible service than AWS (MinIO, Ceph, ...): its URL
    s3_prefix: str = ""  # the objects' names begin with this (e.g. "caseway/"), to share a bucket

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
    def _replicas_are_postgres_replicas(self) -> "Settings":
        if self.replica_urls and not normalize_url(self.database_url).startswith("postgresql"):
            raise ValueError("CASEWAY_DATABASE_REPLICA_URLS are PostgreSQL replicas: CASEWAY_DATABASE_URL names SQLite")
        return self

    @model_validator(mode="after")
    def _direct_url_is_postgres(self) -> "Settings":
        """A direct URL is the PostgreSQL behind a pooler: beside a SQLite database it means nothing."""
        if self.database_direct_url and not normalize_url(self.database_url).startswith("postgresql"):
            raise ValueError(
                "CASEWAY_DATABASE_DIRECT_URL is for PostgreSQL behind PgBouncer: CASEWAY_DATABASE_URL names SQLite"
            )
        return self

    @model_validator(mode="after")
    def _s3_store_is_complete(self) -> "Settings":
        """Refused at start, in one sentence, rather than at the first upload."""
        if self.documents_store == "s3":
            from engine.documents.s3 import available

            if not self.s3_bucket:
                raise ValueError("CASEWAY_DOCUMENTS_STORE=s3 needs CASEWAY_S3_BUCKET, the bucket's name")
            if not available():
                raise ValueError("CASEWAY_DOCUMENTS_STORE=s3 needs boto3: pip install 'caseway[s3]'")
        return self
