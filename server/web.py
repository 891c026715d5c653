"""The browser side: the dashboard at ``/`` and GraphiQL at ``/graphql``, both built by Vite
from the ``web/`` package (``make web``) into a directory that is not in git.

Pages are small HTML files that name content-hashed assets, so the pages are revalidated on
every load and the assets are cached for a year. Everything comes from this server: the pages'
content-security policy allows scripts, styles, fonts, workers and connections from 'self'
alone. When the assets are not built (no Node.js where Caseway was installed) both pages say so
in one sentence, and the API serves as ever.
"""

from pathlib import Path

from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "web" / "dist"
YEAR = 365 * 24 * 3600

POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        # GraphiQL, Monaco and Mermaid's diagrams set style attributes and <style> elements.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self'",  # GraphiQL's editor workers (Monaco)
        "connect-src 'self'",  # HTTP and WebSocket to this server only
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # the page names this build's assets: always revalidate it
}

NOT_BUILT = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Caseway</title></head><body>"
    "<p>The {what} is not built: install Node.js and npm, then run <code>make web</code>. "
    "The GraphQL API answers at <code>POST /graphql</code>.</p></body></html>"
)


class HashedAssets(StaticFiles):
    """Static files whose names carry a hash of their content: cached for a year, never revalidated."""

    def file_response(self, full_path: str | Path, stat_result, scope: Scope, status_code: int = 200) -> Response:  # type: ignore[no-untyped-def, override]
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = f"public, max-age={YEAR}, immutable"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


class WebAssets:
    """The built pages of ``directory`` (``web/dist`` by default), read once at start-up."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or DEFAULT_DIR
        self.pages = {
            name: (self.directory / f"{name}.html").read_text(encoding="utf-8")
            for name in ("index", "graphiql")
            if (self.directory / f"{name}.html").is_file()
        }

    @property
    def built(self) -> bool:
        return bool(self.pages)

    def page(self, name: str, what: str) -> HTMLResponse:
        html = self.pages.get(name)
        if html is None:
            return HTMLResponse(NOT_BUILT.format(what=what), status_code=503, headers=PAGE_HEADERS)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    def dashboard(self) -> HTMLResponse:
        return self.page("index", "dashboard")

    def graphiql(self) -> HTMLResponse:
        return self.page("graphiql", "GraphiQL playground")

    def routes(self) -> list[BaseRoute]:
        if not (self.directory / "assets").is_dir():
            return []  # nothing built: /assets/... is 404 like any unknown path
        return [Mount("/assets", app=HashedAssets(directory=self.directory / "assets"))]


__all__ = ["POLICY", "WebAssets"]
