"""The whole sign-in with the organization's provider in Chromium (issue 45 point 2): the
dashboard offers "Sign in with …" beside the password form, the provider (oidc-provider on
loopback, tests/fixtures/oidc_provider.py) asks who it is, Caseway exchanges the code (PKCE) and
the person lands on the dashboard as the user the provider named, in the provider's groups;
GraphiQL then works with the same token."""

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.async_api import expect

from bench.server import Serve
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SERVE_ENV, why_not
from tests.fixtures.browser import GRANT_ERRORS, demo_ids
from tests.fixtures.database import BACKEND, POSTGRES_URL, admin_sql
from tests.fixtures.documents import CREATE_MANAGED_GROUP
from tests.fixtures.oidc_provider import real_provider

CLIENT = "caseway-dashboard"
# A native client: oidc-provider then takes a loopback redirect URI on any port (RFC 8252), so the
# provider can start before the server whose port it is.
DASHBOARD_CLIENT = {
    "client_id": CLIENT,
    "application_type": "native",
    "token_endpoint_auth_method": "none",
    "redirect_uris": ["http://127.0.0.1/"],
    "grant_types": ["authorization_code"],
    "response_types": ["code"],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    reason = why_not()
    if reason:
        pytest.skip(reason)
    accounts = {"grace": {"name": "Grace Hopper", "groups": ["facilities"]}}
    name = None
    with real_provider([DASHBOARD_CLIENT], accounts) as issuer:
        env = {
            **SERVE_ENV,
            "CASEWAY_OIDC_ISSUER": issuer,
            "CASEWAY_OIDC_AUDIENCE": CLIENT,  # the ID token's audience
            "CASEWAY_OIDC_CLIENT_ID": CLIENT,
        }
        if BACKEND == "postgres":
            name = f"caseway_oidc_{uuid.uuid4().hex[:8]}"
            asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
            url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        else:
            url = f"sqlite:///{tmp_path_factory.mktemp('oidc') / 'caseway.db'}"
        started = Serve(url, env=env)
        try:
            yield started
        finally:
            started.stop()
            if name:
                asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def page(server: Serve) -> Any:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(15_000)
        found = await context.new_page()
        found.requests = []
        found.on("request", lambda request: found.requests.append(request.url))
        yield found
        await browser.close()


async def test_sign_in_with_the_provider_then_graphiql_with_the_same_token(server, page):
    admin = server.login("admin")
    group = server.gql(CREATE_MANAGED_GROUP, {"name": "facilities", "managed": "OIDC"}, token=admin)
    school = demo_ids(server, admin)["School renovation"]
    granted = server.gql(
        GRANT_ERRORS, {"r": school, "i": "project.view", "p": group["createGroup"]["group"]["id"]}, token=admin
    )
    assert granted["grantPermission"]["userErrors"] == []

    await page.goto(server.url + "/")
    await expect(page.get_by_label("Password")).to_be_visible()  # the password form stays
    await page.get_by_role("button", name="Sign in with 127.0.0.1", exact=True).click()

    # The provider's own pages (oidc-provider's development login and consent).
    await page.locator("input[name=login]").fill("grace")
    await page.locator("input[name=password]").fill("anything")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()

    await expect(page.get_by_test_id("viewer")).to_have_text("Grace Hopper")
    assert page.url == server.url + "/"  # the code is gone from the address
    await expect(page.get_by_role("heading", name="School renovation")).to_be_visible()  # through "facilities"
    assert [u for u in page.requests if u.startswith(server.url + "/auth/oidc/token")]

    await page.goto(server.url + "/graphql")  # GraphiQL: the token in its headers tab
    await expect(page.locator(".graphiql-container .monaco-editor").first).to_be_visible()
    await page.locator(".graphiql-execute-button").click()
    await expect(page.locator(".result-window")).to_contain_text("Grace Hopper")
    # Nothing left the machine but the fonts oidc-provider's development pages ask Google for.
    loopback = ("http://127.0.0.1:", "ws://127.0.0.1:", "data:", "https://fonts.g")
    assert [u for u in page.requests if not u.startswith(loopback)] == []
