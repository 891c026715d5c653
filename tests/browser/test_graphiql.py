"""GraphiQL in Chromium: from Caseway's own assets, the editor renders and runs a query with the
token in the headers tab."""

from playwright.async_api import expect


async def test_graphiql_renders_its_editor_and_runs_a_query_offline(servers, open_page):
    first, _ = servers
    page = await open_page(first)
    await page.sign_in("alice")  # the dashboard's token becomes GraphiQL's default header
    await page.page.goto(first.url + "/graphql")
    await expect(page.page.locator(".graphiql-container .monaco-editor").first).to_be_visible()
    await expect(page.page.get_by_text("query Viewer")).to_be_visible()
    await page.page.locator(".graphiql-execute-button").click()
    await expect(page.page.locator(".result-window")).to_contain_text("Alice Analyst")
    await page.screenshot("graphiql")
    assert page.foreign_requests() == []
    assert page.policy_violations() == []
