"""The item page in Chromium, as carol the reviewer uses it: her task appears, the diagram marks
the case's state, a refused action shows its userError beside the choice it concerns, and the
notification badge rises live."""

from playwright.async_api import expect

from tests.fixtures.browser import demo_ids, execute

CREATE_GUTTERS = """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "Gutters",
  amountType: "ALLOCATED", amount: "5400", dueDate: "2031-05-01"}) { workflowItem { id } userErrors { code } } }"""


async def test_carol_reviews_an_item_from_her_tasks(servers, open_page):
    first, _ = servers
    alice = first.login("alice")
    ids = demo_ids(first, alice)
    carol = await open_page(first)
    await carol.sign_in("carol")
    await expect(carol.page.locator("body")).to_have_attribute("data-live", "live")
    unread = int(await carol.page.get_by_test_id("unread").inner_text())

    created = first.gql(CREATE_GUTTERS, {"s": ids["Roof"]}, token=alice)["createWorkflowItem"]
    assert created["userErrors"] == []
    item = created["workflowItem"]["id"]
    execute(first, alice, item, "submit", "Gutters, please review")
    # carol plays the reviewer (the roof's validator): notified, live.
    await expect(carol.page.get_by_test_id("unread")).not_to_have_text(str(unread))

    await carol.page.get_by_role("link", name="My tasks").click()
    task = carol.page.get_by_test_id("task").filter(has_text="Gutters")
    await expect(task).to_contain_text("Start review")
    await task.get_by_role("link", name="Gutters").click()
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("Submitted")
    # The diagram marks the current state, and only it.
    diagram = carol.page.get_by_test_id("diagram")
    await expect(diagram.locator("svg g.current")).to_have_count(1)
    await expect(diagram.locator("svg g.current")).to_contain_text("submitted")

    await carol.page.get_by_role("button", name="Start review", exact=True).click()
    await carol.page.get_by_role("button", name="Preview").click()
    await expect(carol.page.get_by_test_id("preview")).to_contain_text("Gutters will be In review")
    await carol.page.get_by_role("button", name="Confirm Start review").click()
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("In review")
    await expect(diagram.locator("svg g.current")).to_contain_text("in_review")

    await carol.page.get_by_role("button", name="Approve", exact=True).click()
    form = carol.page.get_by_role("form", name="Approve")
    await form.get_by_role("button", name="Preview").click()  # no resolution chosen
    refusal = form.locator(".field:has(label:has-text('Resolution')) .field-errors")
    await expect(refusal).to_be_visible()
    await expect(form.get_by_test_id("preview")).to_have_count(0)
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("In review")  # nothing changed
    await form.get_by_label("Resolution").select_option(label="With conditions")
    await form.get_by_label("Comment").fill("Use copper")
    await form.get_by_role("button", name="Preview").click()
    await expect(form.get_by_test_id("preview")).to_contain_text("Gutters will be Approved (completed)")
    await form.get_by_role("button", name="Confirm Approve").click()
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("Approved")
    await expect(carol.page.get_by_test_id("case-status")).to_have_text("COMPLETED")
    await expect(carol.page.get_by_test_id("history-entry").filter(has_text="Use copper")).to_have_count(1)
    await carol.screenshot("item-approved")
    assert carol.foreign_requests() == []
    assert carol.policy_violations() == []
