"""The permissions screen in Chromium: a grant made for "this and everything in it, now and
later" reaches an item made afterwards, the item's screen says where its hold comes from, and a
board that shows its viewer no item names whom to ask."""

from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.browser import CREATE_PLAIN, demo_ids

PROJECT = """mutation($name: String!) { createProject(input: {displayName: $name}) {
  project { id } userErrors { code } } }"""
SUBPROJECT = """mutation($p: ID!, $name: String!) { createSubproject(input: {projectId: $p, displayName: $name,
  currency: "EUR"}) { subproject { id } userErrors { code message } } }"""
GRANT_VIEW = """mutation($r: ID!, $p: ID!) { grantPermission(input: {resourceId: $r, intent: "subproject.view",
  partyId: $p}) { userErrors { code message } } }"""


async def test_a_grant_for_everything_in_a_project_reaches_what_is_made_later(servers: tuple[Serve, Serve], open_page):
    first, _ = servers
    token = first.login("alice")
    ids = demo_ids(first, token)
    project = first.gql(PROJECT, {"name": "Harbour wall"}, token=token)["createProject"]["project"]["id"]
    sub = first.gql(SUBPROJECT, {"p": project, "name": "Quay"}, token=token)["createSubproject"]["subproject"]["id"]
    first.gql(CREATE_PLAIN, {"s": sub, "name": "Gate"}, token=token)

    alice = await open_page(first)
    await alice.sign_in("alice")
    page = alice.page
    await page.goto(f"{first.url}/#/permissions/{project}")
    grant = page.get_by_role("form", name="Grant a permission")
    await grant.get_by_label("Permission").select_option("project.view")
    await grant.get_by_label("To").select_option(label="Carol Controller (carol)")
    await grant.get_by_label("this and everything in it, now and later").check()
    await grant.get_by_role("button", name="Grant").click()
    row = page.get_by_test_id("grants").locator('tr[data-intent="project.view"]')
    await expect(row.locator(f'[data-party="{ids["carol"]}"]')).to_contain_text("this and everything in it")
    await alice.axe("permissions with a grant that reaches down")

    later = first.gql(CREATE_PLAIN, {"s": sub, "name": "Bollard"}, token=token)["createWorkflowItem"]
    assert later["userErrors"] == []
    await page.goto(f"{first.url}/#/permissions/{later['workflowItem']['id']}")
    held = page.get_by_test_id("grants").locator('tr[data-intent="workflowItem.view"]')
    carol_hold = held.locator(f'[data-party="{ids["carol"]}"]')
    await expect(carol_hold).to_contain_text("inherited from the project")
    await expect(carol_hold.get_by_role("button", name="Revoke")).to_have_count(0)  # revoked where it was made

    carol = await open_page(first)
    await carol.sign_in("carol")
    await carol.page.goto(f"{first.url}/#/subproject/{sub}")
    await expect(carol.page.get_by_test_id("card").locator("> a")).to_have_text(["Gate", "Bollard"])

    # A board carol may see without any item of it: it says whom to ask.
    # (in a project of its own: the demo's grant carol views on the School renovation)
    dock = first.gql(PROJECT, {"name": "Dry dock"}, token=token)["createProject"]["project"]["id"]
    other = first.gql(SUBPROJECT, {"p": dock, "name": "Sheds"}, token=token)
    shed = other["createSubproject"]["subproject"]["id"]
    first.gql(CREATE_PLAIN, {"s": shed, "name": "Shed door"}, token=token)
    assert first.gql(GRANT_VIEW, {"r": shed, "p": ids["carol"]}, token=token)["grantPermission"]["userErrors"] == []
    await carol.page.goto(f"{first.url}/#/subproject/{shed}")
    await expect(carol.page.get_by_text("If you expected some, ask")).to_contain_text("Alice")
