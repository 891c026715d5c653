"""GraphiQL in Chromium: from Caseway's own assets, the editor renders and runs a query with the
token in the headers tab."""

import re

from playwright.async_api import expect

from tests.fixtures.browser import demo_ids, execute


async def test_graphiql_renders_its_editor_and_runs_a_query_offline(servers, open_page):
    first, _ = servers
    page = await open_page(first)
    await page.sign_in("alice")  # the dashboard's token becomes GraphiQL's default header
    await page.page.goto(first.url + "/graphql")
    await expect(page.page.locator(".graphiql-container .monaco-editor").first).to_be_visible()
    await expect(page.page.get_by_text("query Viewer")).to_be_visible()
    await page.page.locator(".graphiql-execute-button").click()
    await expect(page.page.locator(".result-window")).to_contain_text("Alice Analyst")
    # The explorer plugin lists the schema's root fields.
    await page.page.get_by_label("Show GraphiQL Explorer").click()
    await expect(page.page.get_by_text("myTasks", exact=True).first).to_be_visible()
    await page.screenshot("graphiql")
    assert page.foreign_requests() == []
    assert page.policy_violations() == []


async def test_graphiql_runs_a_subscription_over_the_websocket(servers, open_page):
    """From seq 0, so the entry written below reaches the result however soon the server
    registers the subscription; the result pane shows the newest entry."""
    first, _ = servers
    token = first.login("alice")
    labour = demo_ids(first, token)["Labour"]
    page = await open_page(first)
    await page.sign_in("alice")
    await page.page.goto(first.url + "/graphql")
    editor = page.page.locator(".graphiql-query-editor .monaco-editor").first
    await expect(editor).to_be_visible()
    await editor.click()
    await page.page.keyboard.press("ControlOrMeta+A")
    await page.page.keyboard.press("Delete")
    await page.page.keyboard.insert_text('subscription Watch { activity(after: "0") { seq kind comment } }')
    await expect(page.page.locator(".graphiql-query-editor")).to_contain_text("subscription Watch")
    await expect(page.page.locator(".graphiql-tab").filter(has_text="Watch")).to_be_visible()  # parsed
    await page.page.locator(".graphiql-execute-button").click()
    await expect(page.page.locator(".result-window")).to_contain_text('"seq"')
    execute(first, token, labour, "comment", "Seen in GraphiQL")
    await expect(page.page.locator(".result-window")).to_contain_text("Seen in GraphiQL")
    await page.screenshot("graphiql-subscription")
    assert any(url.startswith(f"ws://127.0.0.1:{first.port}/graphql") for url in page.requests)
    assert page.foreign_requests() == []
    assert page.policy_violations() == []


async def test_graphiql_shows_why_a_subscription_was_refused(servers, open_page):
    """Not signed in, the headers tab holds a placeholder token: the server closes the socket
    with 4403 and its reason, which the result pane shows (it used to spin forever); a query
    with the same header gets the same sentence over HTTP."""
    first, _ = servers
    page = await open_page(first)
    await page.page.goto(first.url + "/graphql")
    editor = page.page.locator(".graphiql-query-editor .monaco-editor").first
    await expect(editor).to_be_visible()
    await editor.click()
    await page.page.keyboard.press("ControlOrMeta+A")
    await page.page.keyboard.press("Delete")
    await page.page.keyboard.insert_text("subscription Refused { activity { seq kind } }")
    await expect(page.page.locator(".graphiql-tab").filter(has_text="Refused")).to_be_visible()  # parsed
    await page.page.locator(".graphiql-execute-button").click()
    result = page.page.locator(".result-window")
    await expect(result).to_contain_text("The server closed the subscription (4403)")
    await expect(result).to_contain_text("token")
    # Finished, not spinning: the button offers to run again rather than to stop.
    await expect(page.page.locator(".graphiql-execute-button")).to_have_attribute(
        "aria-label", re.compile("^Execute query")
    )
    await page.screenshot("graphiql-subscription-refused")
    assert page.foreign_requests() == []
