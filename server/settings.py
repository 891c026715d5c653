"""Settings, read from CASEWAY_* environment variables by every command alike."""

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASEWAY_")

    database_url: str = "sqlite:///./caseway.db"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    token_ttl: int = 30 * 24 * 3600  # seconds a login token stays valid
    workflows_dir: Path | None = None  # extra workflow spec files defined at startup
    graphiql: bool = True
    db_pool_size: int = 10
    legacy_ws: bool = False  # also accept the old `graphql-ws` subscription protocol
    ws_init_timeout: float = 10.0  # seconds a WebSocket may take to send connection_init
    ws_max_subscriptions: int = 100  # per connection
    # Other origins whose pages may open a WebSocket (same-origin and non-browser clients always
    # may); ["*"] allows any.
    allowed_origins: list[str] = []
    hub_poll_interval: float = 5.0  # seconds between safety-net reads of the log
    # seconds an HTTP request's bearer token is remembered (server/actor_cache.py); 0: never
    auth_cache_seconds: float = 10.0
    ws_auth_refresh: float = 30.0  # seconds between re-checks of a live connection's token and groups
