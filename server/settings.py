"""Settings, read from CASEWAY_* environment variables by every command alike."""

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from server.settings_database import DatabaseSettings
from server.settings_oidc import OidcSettings


class Settings(OidcSettings, DatabaseSettings):
    """Every setting; the database's (first) and the identity provider's live in modules of their
    own (server/settings_database.py, server/settings_oidc.py)."""

    model_config = SettingsConfigDict(env_prefix="CASEWAY_")

    host: str = Field("127.0.0.1", description="where `caseway serve` listens")
    port: int = Field(default=8000, ge=1, le=65535, description="the port it listens on")
    # Addresses of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto `caseway serve`
    # believes (comma-separated, or "*"); empty: none, so no local process can choose the client
    # address the login throttle counts.
    forwarded_allow_ips: str = Field(
        "",
        description=(
            "reverse proxies whose `X-Forwarded-For` is believed (comma-separated addresses, or `*`); unset, the "
            "client address is the connection's"
        ),
    )
    workers: int = Field(1, ge=1, le=256, description="server processes; more than one needs PostgreSQL")
    token_ttl: int = Field(
        30 * 24 * 3600,
        ge=60,
        le=10 * 365 * 24 * 3600,
        description="seconds a login token stays valid (30 days)",
    )
    workflows_dir: Path | None = Field(
        None,
        description="a directory of workflow spec files (`.yaml`, `.yml`, `.json`) defined at start-up",
    )
    graphiql: bool = Field(True, description="serve GraphiQL on GET /graphql")
    # "text", or "json": every server log line one JSON object (server/access_log.py)
    log_format: Literal["text", "json"] = Field(
        "text",
        description="`text`, or `json`: each server log line one JSON object",
    )
    web_dir: Path | None = Field(
        None,
        description="the built dashboard and GraphiQL; unset: `web/dist` of the checkout (`make web`)",
    )
    db_pool_size: int = Field(10, ge=1, le=1000, description="database connections per process")
    legacy_ws: bool = Field(False, description="also accept the old `graphql-ws` WebSocket protocol")
    ws_init_timeout: float = Field(
        10.0,
        ge=0.1,
        le=300,
        description="seconds a WebSocket may take to send `connection_init`",
    )
    ws_max_subscriptions: int = Field(100, ge=1, le=10_000, description="subscriptions per WebSocket connection")
    ws_max_operations: int = Field(
        10,
        ge=1,
        le=1000,
        description="queries and mutations running at once on one WebSocket",
    )
    # Other origins whose pages may open a WebSocket (same-origin and non-browser clients always
    # may); ["*"] allows any.
    allowed_origins: list[str] = Field(
        [],
        description=(
            "other origins whose pages may call `/graphql` or open a WebSocket, as JSON "
            '(`["https://dash.example"]`, `["*"]`); same-origin and non-browser clients always may'
        ),
    )
    hub_poll_interval: float = Field(
        5.0,
        ge=0.1,
        le=3600,
        description="seconds between safety-net reads of the log by the live event hub",
    )
    # Whether `caseway serve` sweeps due timers; false leaves them to the other server processes
    # (or to `caseway run-due-timers`).
    run_timers: bool = Field(
        True,
        description=(
            "whether `caseway serve` sweeps due timers; `false` leaves them to the other server processes (or to "
            "`caseway run-due-timers`)"
        ),
    )
    timer_poll_interval: float = Field(
        10.0,
        ge=0.1,
        le=3600,
        description="seconds between safety-net sweeps for due timers",
    )
    # The floor on how often one case's timers fire (engine/cases/timers.py): a 1-second TIME
    # action that left its case where it is enabled again wrote to the log every second for ever.
    timer_min_interval: float = Field(
        60.0,
        ge=0,
        le=86400,
        description=(
            "seconds: a timer enabled by the firing of a timer of the same case falls due no sooner than this "
            "after it (a `time` action that repeats fires at most this often; `0`: as the spec says)"
        ),
    )
    # seconds an HTTP request's bearer token is remembered (server/actor_cache.py); 0: never
    auth_cache_seconds: float = Field(
        10.0,
        ge=0,
        le=3600,
        description=(
            "seconds a process remembers who a bearer token stands for (`0`: ask the database every time); on "
            "PostgreSQL a change reaches every process at once"
        ),
    )
    ws_auth_refresh: float = Field(
        30.0,
        ge=0.1,
        le=3600,
        description="seconds between re-checks of live connections' tokens and groups",
    )

    # --- Bounded work per request (schema/limits/, server/request_limits.py; docs/api.md "Request limits") ---
    max_body_bytes: int = Field(
        1_000_000,
        ge=1024,
        le=2**31 - 1,
        description="request body (and WebSocket message) size; larger: HTTP 413",
    )
    max_query_tokens: int = Field(2_000, ge=10, le=100_000, description="tokens in one GraphQL document")
    # characters of one GraphQL document, comments and whitespace included: the parser reads each
    # one (a 990 KB comment held the server 604 ms; 100,000 characters take ~20 ms)
    max_query_chars: int = Field(
        100_000,
        ge=100,
        le=10_000_000,
        description="characters of one GraphQL document, comments and whitespace included",
    )
    max_query_depth: int = Field(15, ge=1, le=1000, description="nested fields, through fragments")
    max_aliases: int = Field(50, ge=0, le=10_000, description="aliased fields in one document")
    # copies of one field (one response key) in one selection set, fragments merged in: graphql-core
    # compares every pair of them (495 copies of `viewer { login }` held a process 1-2.6 s)
    max_repeated_fields: int = Field(
        20,
        ge=1,
        le=1000,
        description=(
            "copies of one field (one response key) in one selection set, fragments merged in: graphql-core "
            "compares every pair of them"
        ),
    )
    max_query_cost: int = Field(
        50_000,
        ge=1,
        le=100_000_000,
        description="nodes a query may return, from its `first` arguments",
    )
    operation_timeout: float = Field(10.0, ge=0.1, le=3600, description="seconds a query or mutation may run")
    # Queries whose root field the read planner can compile are answered by one SQL statement
    # that builds their JSON (resolvers/compiled); false: every field through its resolver.
    compiled_reads: bool = Field(
        True,
        description=(
            "answer the reads the planner compiles (`node` of a project, subproject or item, `projects` and "
            "`myTasks`, nested as deep as their fields have SQL forms: docs/architecture.md) with one SQL "
            "statement each; `false`: every field through its resolver (the same answer, slower)"
        ),
    )

    # --- Logins and tokens (engine/people/throttle.py) ---
    login_free_failures: int = Field(
        5,
        ge=0,
        le=1_000_000,
        description="failed logins per login name or client address before answers slow down",
    )
    login_max_delay: float = Field(
        2.0,
        ge=0,
        le=60,
        description="seconds, the longest delay of a throttled login (0.25 s, doubling per failure)",
    )
    login_lockout_failures: int = Field(
        20,
        ge=1,
        le=100_000,
        description="failed logins of one name from one address after which that address is refused for that name",
    )
    login_address_lockout_failures: int = Field(
        100,
        ge=1,
        le=1_000_000,
        description="failed logins from one address (any names) after which it is refused",
    )
    login_lockout_seconds: int = Field(
        900,
        ge=1,
        le=30 * 24 * 3600,
        description="how long a refusal lasts; older failures are forgotten",
    )
    # password checks queued or running at once per process; more are refused at once (scrypt
    # takes ~0.13 s of one core here: 16 is about 2 s of work)
    login_max_password_checks: int = Field(
        16,
        ge=1,
        le=1000,
        description="password checks waiting or running at once per process; more are refused at once",
    )

    # --- Verifiable history (engine/history/history.py) ---
    # HMAC key for signed checkpoints of the activity hash chains; never stored in the database.
    # Empty: no checkpoints are signed, and verification checks the hash chains alone.
    secret_key: str = Field(
        "",
        description=(
            "HMAC key that signs history checkpoints and document download links; never stored in the database"
        ),
    )
    checkpoint_interval: float = Field(
        60.0,
        ge=0.05,
        le=86400,
        description="seconds between checkpoint passes of a server process",
    )

    # --- Jobs (engine/jobs, server/job_runner.py; docs/workflows.md "Webhook jobs") ---
    # Webhook endpoints spec authors may name: {"billing": {"url": "https://...", "secret": "...",
    # "timeout": 10, "serialize_by": "case", "format": "plain", "fields": {"invoice": ["amount"]}}}
    # (serialize_by: case, endpoint or none; format: plain or cloudevents; fields: the case fields
    # each workflow may send, none by default; docs/api.md "Webhook payloads").
    webhooks: dict[str, Any] = Field(
        {},
        description=(
            'webhook endpoints spec authors may name, as JSON: `{"billing": {"url": "https://…", "secret": "…", '
            '"timeout": 10, "serialize_by": "case", "format": "plain", "fields": {"invoice": ["amount"]}}}`; '
            "`format` is `plain` or `cloudevents`, `fields` the case fields each workflow may send (none by "
            "default; see [docs/api.md](docs/api.md#webhook-payloads))"
        ),
    )
    # Retry policy per job kind, replacing the kind's own: {"webhook": {"max_attempts": 8,
    # "initial_delay": 1, "multiplier": 2, "max_delay": 60, "jitter": true}}.
    job_retry: dict[str, Any] = Field(
        {},
        description=(
            'retry policy per job kind, as JSON: `{"webhook": {"max_attempts": 8, "initial_delay": 1, '
            '"multiplier": 2, "max_delay": 60, "jitter": true}}`'
        ),
    )
    run_jobs: bool = Field(
        True,
        description="whether `caseway serve` runs jobs; `false` leaves them to `caseway run-jobs` processes",
    )
    job_concurrency: int = Field(32, ge=1, le=1000, description="jobs one process runs at once")
    job_poll_interval: float = Field(5.0, ge=0.1, le=3600, description="seconds between safety-net looks for due jobs")

    # --- Email (engine/notify/mail.py, engine/notify/delivery.py; docs/api.md "Email and digests") ---
    # The SMTP server notifications are emailed through: smtp://[user:password@]host:port (STARTTLS
    # when offered) or smtps://...; empty: no email. Needs secret_key (it signs unsubscribe links).
    smtp_url: str = Field(
        "",
        description=(
            "the SMTP server notifications are emailed through: `smtp://[user:password@]host:port` (STARTTLS when"
            " the server offers it) or `smtps://…`; unset: no email, and choosing `EMAIL` is refused. Needs "
            "`CASEWAY_SECRET_KEY`, which signs the unsubscribe links (see [docs/api.md](docs/api.md#email-and-"
            "digests))"
        ),
    )
    mail_from: str = Field("Caseway <caseway@localhost>", description="the `From` of every email")
    public_url: str = Field(
        "",
        description=(
            "where people reach this server (`https://caseway.example`): emails link to items, actions and "
            "tasks in the dashboard from it, and webhook payloads carry the item's link; unset: neither carries "
            "such links (the log says so at start) and unsubscribe links start with "
            "`http://CASEWAY_HOST:CASEWAY_PORT`"
        ),
    )

    # --- Documents (engine/documents; docs/api.md "Documents") ---
    # Where document bytes are stored (content-addressed); default: caseway-documents/ next to
    # the SQLite database file, or in the working directory for PostgreSQL.
    documents_dir: Path | None = Field(
        None,
        description=(
            "where uploaded documents' bytes are stored, one file per SHA-256 (identical files once); unset: "
            "`caseway-documents/` next to the SQLite file, else in the working directory; every server process "
            "must see the same directory"
        ),
    )
    # One uploaded file; larger is refused (TOO_LARGE). At most 2 GiB - 1: Document.size is a GraphQL Int.
    max_document_bytes: int = Field(
        default=25 * 1024 * 1024,
        ge=1,
        le=2**31 - 1,
        description=(
            "bytes of the largest uploaded document (1 to 2147483647); a larger one is refused (`TOO_LARGE`) with"
            " nothing stored, and a multipart request body may be this much larger than `CASEWAY_MAX_BODY_BYTES`"
        ),
    )
    # "local" (the directory above) or "s3": an S3-compatible bucket, for servers on several
    # machines (engine/documents/s3.py; the s3 extra). Region and credentials: the standard AWS
    # variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION) or an instance role.
    documents_store: Literal["local", "s3"] = Field(
        "local",
        description=(
            "where documents' bytes go: `local` (the directory of `CASEWAY_DOCUMENTS_DIR`) or `s3`, an "
            "S3-compatible bucket that servers on several machines share (needs `pip install 'caseway[s3]'`; "
            "region and credentials from the standard `AWS_*` variables or an instance role)"
        ),
    )
    s3_bucket: str = Field(
        "",
        description=(
            "the bucket of the `s3` store (needed by it); objects are named by their SHA-256, identical files once"
        ),
    )
    s3_endpoint_url: str = Field(
        "",
        description="the URL of an S3-compatible service other than AWS (MinIO, Ceph, …); unset: AWS S3",
    )
    s3_prefix: str = Field(
        "",
        description=(
            "what the `s3` store's object names begin with (e.g. `caseway/`), to share a bucket; collection "
            "deletes nothing outside it"
        ),
    )

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
