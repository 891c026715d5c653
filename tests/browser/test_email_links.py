"""Where an email's links lead (docs/api.md, "Email and digests"): ``/#/item/<id>/<action>`` is
the item's page with the reader's action open, as its sentence's path says
(engine/notify/sentences.py); a link to an action that is not the reader's now shows the page
alone."""

from playwright.async_api import expect

from tests.fixtures.browser import demo_ids, execute

CREATE_SHUTTERS = """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "Shutters"}) {
  workflowItem { id } userErrors { code } } }"""


async def test_a_link_to_a_task_opens_its_action_on_the_item_page(servers, open_page):
    first, _ = servers
    alice = first.login("alice")
    ids = demo_ids(first, alice)
    created = first.gql(CREATE_SHUTTERS, {"s": ids["Roof"]}, token=alice)["createWorkflowItem"]
    assert created["userErrors"] == []
    item = created["workflowItem"]["id"]
    execute(first, alice, item, "submit", "Shutters, please review")
    carol = await open_page(first)
    await carol.sign_in("carol")

    # Approving is not carol's to do yet: the page, and no dialog.
    await carol.page.goto(f"{first.url}/#/item/{item}/approve")
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("Submitted")
    await expect(carol.page.get_by_role("form", name="Approve")).to_have_count(0)
    await expect(carol.page.get_by_role("form", name="Start review")).to_have_count(0)

    # Her task's link: the same page with its dialog open, ready to act.
    await carol.page.goto(f"{first.url}/#/item/{item}/start_review")
    form = carol.page.get_by_role("form", name="Start review")
    await expect(form).to_be_visible()
    await form.get_by_role("button", name="Preview").click()
    await expect(form.get_by_test_id("preview")).to_contain_text("Shutters will be In review")
    assert carol.foreign_requests() == []
