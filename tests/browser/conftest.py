"""Browser tests: Playwright (the Python package) driving Debian's Chromium against real
`caseway serve` processes started here, each on a fresh database, with the built web assets.

Skipped with one line when there is no browser or nothing is built. Screenshots go to
build/browser-artifacts/ (not in git): those a test takes, and one of every page a failed
test had open (named failed-<test>-<n>.png).
"""

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.server import Serve
from server.bootstrap import DEMO_PASSWORD
from server.web import DEFAULT_DIR
from tests.fixtures.browser import DOCUMENT_LIMIT
from tests.fixtures.database import BACKEND, POSTGRES_URL, admin_sql

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser-artifacts"
# axe-core from web/node_modules (a devDependency: `make web` installs it), run in the page.
AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
}"""
CHROMIUM = os.environ.get("CASEWAY_TEST_CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags Chromium calls Google's hosts, which a closed
# network refuses noisily (and the network-log assertions would have to filter them out).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def why_not() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    if not (DEFAULT_DIR / "index.html").is_file():
        return "the web assets are not built (make web; needs Node.js)"
    return None


# Small pools: a page's few requests need no more, and the PostgreSQL server is shared. The
# documents' limit is small so that a test can cross it.
SERVE_ENV = {"CASEWAY_DB_POOL_SIZE": "3", "CASEWAY_MAX_DOCUMENT_BYTES": str(DOCUMENT_LIMIT)}


# Package scope: the servers (and their database connections) go when the browser tests end.
@pytest.fixture(scope="package")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serve, Serve]]:
    """Two servers on one fresh database: on PostgreSQL two processes (the first with 2 workers),
    so an event reaches a page connected to another process; on SQLite, one server twice."""
    reason = why_not()
    if reason:
        pytest.skip(reason)
    name = None
    started: list[Serve] = []
    # Documents in a directory of the test's that every server process shares, and links signed
    # with one key, so that a link one worker made downloads from another.
    env = {
        **SERVE_ENV,
        "CASEWAY_DOCUMENTS_DIR": str(tmp_path_factory.mktemp("documents")),
        "CASEWAY_SECRET_KEY": "browser-tests-" + uuid.uuid4().hex,
    }
    try:
        if BACKEND == "postgres":
            name = f"caseway_browser_{uuid.uuid4().hex[:8]}"
            asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
            url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
            started.append(Serve(url, workers=2, env=env))
            started.append(Serve(url, env=env))
            yield (started[0], started[1])
        else:
            started.append(Serve(f"sqlite:///{tmp_path_factory.mktemp('browser') / 'caseway.db'}", env=env))
            yield (started[0], started[0])
    finally:  # also when a server did not start
        for server in started:
            server.stop()
        if name:
            asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="package")
async def browser(servers: tuple[Serve, Serve]) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


class Page:
    """A page in its own browser context, with what it asked the network for and what it
    logged, so a test can assert that nothing left 127.0.0.1 and no policy was violated."""

    def __init__(self, page: Any, server: Serve) -> None:
        self.page = page
        self.server = server
        self.requests: list[str] = []
        self.console: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("websocket", lambda socket: self.requests.append(socket.url))
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    async def sign_in(self, login: str, password: str = DEMO_PASSWORD) -> None:
        await self.page.goto(self.server.url + "/")
        await self.page.get_by_label("Login").fill(login)
        await self.page.get_by_label("Password").fill(password)
        await self.page.get_by_role("button", name="Sign in").click()
        await self.page.get_by_test_id("viewer").wait_for()

    def foreign_requests(self) -> list[str]:
        local = (f"http://127.0.0.1:{self.server.port}/", f"ws://127.0.0.1:{self.server.port}/")
        return [url for url in self.requests if not url.startswith(local) and not url.startswith("data:")]

    def policy_violations(self) -> list[str]:
        return [line for line in self.console if "Content Security Policy" in line or line.startswith("pageerror")]

    async def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(ARTIFACTS / f"{BACKEND}-{name}.png"), full_page=True)

    async def axe(self, view: str) -> None:
        """No serious or critical axe-core violation on the page as it is now (`view` names it in
        the failure); and the page does not scroll sideways."""
        assert AXE.is_file(), f"{AXE} is missing: run make web (npm ci in web/)"
        if not await self.page.evaluate("typeof window.axe !== 'undefined'"):
            # Evaluated, not a <script>: the server's Content Security Policy allows no inline script.
            await self.page.evaluate(AXE.read_text() + "\n;true")
        violations = await self.page.evaluate(AXE_RUN)
        assert violations == [], f"axe on {view}: {violations}"
        overflow = await self.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{view} scrolls sideways by {overflow} px"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    """Keeps each phase's report on the test, so open_page knows at teardown that it failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
async def open_page(browser: Any, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """``await open_page(server, width=1400)``: a fresh context (no shared storage) and its page.
    When the test fails, a screenshot of each of its pages is kept."""
    contexts = []
    pages: list[Page] = []

    async def open_(server: Serve, width: int = 1400) -> Page:
        context = await browser.new_context(viewport={"width": width, "height": 900})
        context.set_default_timeout(15_000)
        contexts.append(context)
        pages.append(Page(await context.new_page(), server))
        return pages[-1]

    yield open_
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        for n, page in enumerate(pages):
            with contextlib.suppress(Exception):  # a page that died cannot be shot; the failure says why
                await page.screenshot(f"failed-{request.node.name}-{n}")
    for context in contexts:
        await context.close()


__all__ = ["Page"]
