"""The dashboard in Chromium: alice acts on a board while bob watches it live from another
browser context (and, on PostgreSQL, another server process); a user without grants sees no
project; and no page asks anything of a host other than 127.0.0.1."""

import asyncio
from typing import Any

import pytest
from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.browser import GRANT_ERRORS, demo_ids, execute


def card_names(page: Any, state: str) -> Any:
    return page.locator(f'[data-testid=column][data-state="{state}"] [data-testid=card] a')


@pytest.fixture(scope="module")
def roof(servers: tuple[Serve, Serve]) -> dict[str, Any]:
    """The demo's ids, alice's token, and bob allowed to watch the roof: he may view the demo
    projects; the roof's items and the project's history (the live feed) are granted here."""
    first, _ = servers
    alice_token = first.login("alice")
    ids = demo_ids(first, alice_token)
    for resource, intent in [
        (ids["School renovation"], "project.viewHistory"),
        *((ids[name], "workflowItem.view") for name in ("Scaffolding", "Tiles", "Labour")),
    ]:
        granted = first.gql(GRANT_ERRORS, {"r": resource, "i": intent, "p": ids["bob"]}, token=alice_token)
        assert granted["grantPermission"]["userErrors"] == []
    return {**ids, "alice token": alice_token}


async def test_alice_acts_on_a_board_and_bob_sees_it_live_without_reloading(servers, roof, open_page):
    first, second = servers
    ids = roof

    bob = await open_page(second)  # on PostgreSQL another server process than alice's
    await bob.sign_in("bob")
    await bob.page.goto(f"{second.url}/#/subproject/{ids['Roof']}")
    await expect(card_names(bob.page, "draft")).to_have_text(["Scaffolding", "Tiles", "Labour"])
    await expect(bob.page.locator("body")).to_have_attribute("data-live", "live")
    await bob.page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    await expect(bob.page.get_by_test_id("feed-entry")).to_have_count(0)

    alice = await open_page(first)
    await alice.sign_in("alice")
    await alice.page.get_by_role("link", name="Roof").click()
    await expect(card_names(alice.page, "draft")).to_have_text(["Scaffolding", "Tiles", "Labour"])
    # Drag Labour onto Scaffolding: it goes before it (reorderWorkflowItems).
    await alice.page.locator('[data-testid=card]:has-text("Labour")').drag_to(
        alice.page.locator('[data-testid=card]:has-text("Scaffolding")')
    )
    await expect(card_names(alice.page, "draft")).to_have_text(["Labour", "Scaffolding", "Tiles"])
    await expect(card_names(bob.page, "draft")).to_have_text(["Labour", "Scaffolding", "Tiles"])

    await alice.page.get_by_role("link", name="Scaffolding").click()
    await alice.page.get_by_role("button", name="Submit", exact=True).click()
    await alice.page.get_by_label("Comment").fill("Ready for review")
    await alice.page.get_by_role("button", name="Preview").click()
    await alice.page.get_by_role("button", name="Confirm Submit").click()
    await expect(alice.page.get_by_test_id("case-state")).to_have_text("Submitted")

    # bob's card moved column, and his feed grew, without a reload.
    await expect(card_names(bob.page, "submitted")).to_have_text(["Scaffolding"])
    await expect(card_names(bob.page, "draft")).to_have_text(["Labour", "Tiles"])
    await expect(bob.page.get_by_test_id("feed-entry").filter(has_text="Ready for review")).to_have_count(1)
    # in the server's words for bob (Activity.sentence): what alice did, with the workflow's names.
    submitted = bob.page.get_by_test_id("feed-entry").filter(has_text="Ready for review").locator(".sentence")
    await expect(submitted).to_have_text("Alice Analyst submitted Scaffolding (now Submitted)")
    assert await bob.page.evaluate("window.__sameDocument") is True
    # alice's own history shows the entry, live too.
    await expect(alice.page.get_by_test_id("history-entry").filter(has_text="Ready for review")).to_have_count(1)
    await alice.screenshot("item")
    await bob.screenshot("board")

    for page in (alice, bob):
        assert page.foreign_requests() == []
        assert page.policy_violations() == []
    assert any(url.startswith("ws://127.0.0.1") for url in bob.requests)  # live over this server's socket


async def test_a_lost_connection_shows_and_the_page_catches_up_from_its_last_seq(servers, roof, open_page):
    """bob's socket is cut (Playwright stands between page and server); while his page keeps
    failing to reconnect it says so, alice works on; once the page is back it shows every entry
    it missed, once, and the card where it now is."""
    first, second = servers
    alice = roof["alice token"]
    gate: dict[str, Any] = {"open": True, "sockets": []}

    async def route(socket: Any) -> None:
        if not gate["open"]:
            await socket.close(code=1012, reason="cut by the test")
            return
        socket.connect_to_server()
        gate["sockets"].append(socket)

    bob = await open_page(second)
    await bob.page.route_web_socket("**/graphql", route)
    await bob.sign_in("bob")
    await bob.page.goto(f"{second.url}/#/subproject/{roof['Roof']}")
    await expect(bob.page.locator("body")).to_have_attribute("data-live", "live")
    await expect(card_names(bob.page, "draft")).to_contain_text(["Tiles"])
    execute(first, alice, roof["Labour"], "comment", "before the cut")
    await expect(bob.page.get_by_test_id("feed-entry").filter(has_text="before the cut")).to_have_count(1)

    gate["open"] = False
    await asyncio.gather(*(socket.close(code=1012, reason="cut by the test") for socket in gate["sockets"]))
    await expect(bob.page.locator("body")).to_have_attribute("data-live", "lost")
    await expect(bob.page.get_by_role("alert").filter(has_text="live connection to the server is lost")).to_be_visible()
    execute(first, alice, roof["Labour"], "comment", "while away 1")
    execute(first, alice, roof["Tiles"], "submit", "while away 2")
    await bob.screenshot("connection-lost")

    gate["open"] = True
    await expect(bob.page.locator("body")).to_have_attribute("data-live", "live")
    await expect(card_names(bob.page, "submitted")).to_contain_text(["Tiles"])
    feed = bob.page.get_by_test_id("feed-entry")
    for comment in ("before the cut", "while away 1", "while away 2"):
        await expect(feed.filter(has_text=comment)).to_have_count(1)
    await expect(bob.page.get_by_role("alert")).to_have_count(0)
    assert bob.foreign_requests() == []


async def test_a_user_without_grants_sees_no_project(servers, open_page):
    first, _ = servers
    admin = first.login("admin")
    ids = demo_ids(first, admin)
    created = first.gql(
        'mutation { createUser(input: {login: "dora", password: "dora-password-1"}) { userErrors { code } } }',
        token=admin,
    )
    assert created["createUser"]["userErrors"] == []

    dora = await open_page(first)
    await dora.sign_in("dora", "dora-password-1")
    await expect(dora.page.get_by_text("There are no projects you may view.")).to_be_visible()
    await expect(dora.page.get_by_test_id("project")).to_have_count(0)
    assert "School renovation" not in await dora.page.content()
    # Straight to a hidden board: the same answer as a board that does not exist.
    await dora.page.goto(f"{first.url}/#/subproject/{ids['Roof']}")
    await expect(dora.page.get_by_text("There is no such subproject, or you may not view it.")).to_be_visible()
    assert "Scaffolding" not in await dora.page.content()
    await dora.screenshot("no-projects")
    assert dora.foreign_requests() == []


async def test_a_wrong_password_is_shown_at_the_form(servers, open_page):
    first, _ = servers
    page = await open_page(first)
    await page.page.goto(first.url + "/")
    await page.page.get_by_label("Login").fill("alice")
    await page.page.get_by_label("Password").fill("not-her-password")
    await page.page.get_by_role("button", name="Sign in").click()
    await expect(page.page.locator("form[aria-label='Sign in'] [data-code=INVALID_CREDENTIALS]")).to_be_visible()
    await expect(page.page.get_by_test_id("viewer")).to_have_count(0)
