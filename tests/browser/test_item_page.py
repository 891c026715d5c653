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
    await expect(diagram.locator("svg g.current")).to_contain_text("Submitted")  # by its pretty name

    await carol.page.get_by_role("button", name="Start review", exact=True).click()
    await carol.page.get_by_role("button", name="Preview").click()
    await expect(carol.page.get_by_test_id("preview")).to_contain_text("Gutters will be In review")
    await carol.page.get_by_role("button", name="Confirm Start review").click()
    await expect(carol.page.get_by_test_id("case-state")).to_have_text("In review")
    await expect(diagram.locator("svg g.current")).to_contain_text("In review")

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
    await expect(carol.page.get_by_test_id("case-status")).to_have_text("Done")
    await expect(carol.page.get_by_test_id("history-entry").filter(has_text="Use copper")).to_have_count(1)
    await carol.screenshot("item-approved")
    assert carol.foreign_requests() == []
    assert carol.policy_violations() == []


CREATE_DESK = """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "Desk"}) {
  workflowItem { id } userErrors { code } } }"""


async def test_alice_submits_an_amount_through_the_fields_form_and_the_approval_goes_to_the_cfo(servers, open_page):
    """The action dialog is a form of the fields the action sets: a bad amount's error shows under
    it, and nothing changes; a good one is listed on the item page; approving over 10,000 goes
    on to the CFO (the approval workflow's route)."""
    first, _ = servers
    alice_token = first.login("alice")
    ids = demo_ids(first, alice_token)
    created = first.gql(CREATE_DESK, {"s": ids["Roof"]}, token=alice_token)["createWorkflowItem"]
    item = created["workflowItem"]["id"]
    alice = await open_page(first)
    await alice.sign_in("alice")
    page = alice.page
    await page.goto(f"{first.url}/#/item/{item}")
    await page.get_by_role("button", name="Submit", exact=True).click()
    form = page.get_by_role("form", name="Submit")
    await form.get_by_label("Amount").fill("-5")
    await form.get_by_role("button", name="Preview").click()
    under = form.locator(".field[data-field='amount'] .field-errors")
    await expect(under).to_have_text("Amount must be at least 0.")
    await expect(form.get_by_test_id("preview")).to_have_count(0)
    await alice.axe("action dialog with a field error")
    await form.get_by_label("Amount").fill("12500")
    await form.get_by_label("Vendor").fill("Acme")
    await form.get_by_role("button", name="Preview").click()
    await expect(form.get_by_test_id("preview")).to_contain_text("Desk will be Submitted")
    await form.get_by_role("button", name="Confirm Submit").click()
    await expect(page.get_by_test_id("case-state")).to_have_text("Submitted")
    fields = page.get_by_test_id("case-fields")
    await expect(fields.locator("[data-field='amount']")).to_have_text("12500.00 EUR")
    await expect(fields.locator("[data-field='vendor']")).to_have_text("Acme")
    carol_token = first.login("carol")
    execute(first, carol_token, item, "start_review", "Looking")
    result = first.gql(
        """mutation($i: ID!) { executeAction(input: {workflowItemId: $i, action: "approve",
        resolution: "as_submitted"}) { case { state { shortName } } userErrors { code } } }""",
        {"i": item},
        token=carol_token,
    )["executeAction"]
    assert result == {"case": {"state": {"shortName": "cfo_review"}}, "userErrors": []}
