"""The board in Chromium: its filters (the server's name filter, the page's overdue one), and a
card dropped on a column that two actions lead to: a menu of both, then the chosen one's preview."""

from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.browser import CREATE_DUE, CREATE_PLAIN, card_names, column, demo_ids, drag


async def test_the_board_filters_by_name_and_by_overdue(servers: tuple[Serve, Serve], open_page):
    """The name filter is the server's (ProjectFilter.search); overdue is judged on the page."""
    first, _ = servers
    token = first.login("alice")
    ids = demo_ids(first, token)
    made = first.gql(
        CREATE_DUE, {"s": ids["Roof"], "name": "Downpipe", "due": "2020-05-01", "carol": ids["carol"]}, token=token
    )
    assert made["createWorkflowItem"]["userErrors"] == []
    alice = await open_page(first)
    await alice.sign_in("alice")
    await alice.page.goto(f"{first.url}/#/subproject/{ids['Roof']}")
    cards = alice.page.get_by_test_id("card")
    await expect(cards.filter(has_text="Tiles")).to_have_count(1)
    everything = await cards.count()
    assert everything >= 3
    filters = alice.page.get_by_role("search", name="Filter the board")
    await filters.get_by_label("Name").fill("til")
    await expect(cards.locator("> a")).to_have_text(["Tiles"])
    await alice.axe("filtered board")
    await filters.get_by_label("Name").fill("")
    await expect(cards).to_have_count(everything)
    await filters.get_by_label("Overdue only").check()
    await expect(cards.filter(has_text="Downpipe")).to_have_count(1)
    await expect(cards.filter(has_text="Tiles")).to_have_count(0)  # Tiles has no due date
    await expect(cards.filter(has=alice.page.locator(".overdue"))).to_have_count(await cards.count())


TWO_WAYS = {
    "short_name": "two_ways",
    "roles": {"doer": {"callbacks": ["creation_user"]}},
    "states": {"todo": {"pretty_name": "To do"}, "done": {"pretty_name": "Done", "terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "todo"},
        "finish": {"pretty_name": "Finish", "assigned_role": "doer", "assigned_states": ["todo"], "new_state": "done"},
        "skip": {"pretty_name": "Skip", "assigned_role": "doer", "assigned_states": ["todo"], "new_state": "done"},
    },
}
DEFINE_TWO_WAYS = """mutation($spec: JSON!) { defineWorkflow(input: {spec: $spec}) { userErrors { code message } } }"""
TWO_WAYS_BOARD = """mutation($p: ID!) { createSubproject(input: {projectId: $p, displayName: "Chores", currency: "EUR",
  workflow: "two_ways"}) { subproject { id } userErrors { code message } } }"""


async def test_a_card_dropped_where_two_actions_lead_offers_both(servers: tuple[Serve, Serve], open_page):
    first, _ = servers
    defined = first.gql(DEFINE_TWO_WAYS, {"spec": TWO_WAYS}, token=first.login("admin"))["defineWorkflow"]
    assert defined["userErrors"] == []
    token = first.login("alice")
    ids = demo_ids(first, token)
    made = first.gql(TWO_WAYS_BOARD, {"p": ids["School renovation"]}, token=token)["createSubproject"]
    assert made["userErrors"] == []
    board = made["subproject"]["id"]
    item = first.gql(CREATE_PLAIN, {"s": board, "name": "Paint"}, token=token)["createWorkflowItem"]
    assert item["userErrors"] == []

    alice = await open_page(first)
    await alice.sign_in("alice")
    await alice.page.goto(f"{first.url}/#/subproject/{board}")
    paint = column(alice.page, "todo").locator("[data-testid=card]", has_text="Paint")
    await drag(alice.page, paint, column(alice.page, "done"))
    menu = alice.page.get_by_test_id("move-dialog")
    await expect(menu.get_by_role("heading")).to_have_text("Move Paint to Done")
    await expect(menu.get_by_role("list", name="Actions").get_by_role("button")).to_have_text(
        ["Finish → Done", "Skip → Done"]
    )
    await alice.axe("move menu of two actions")
    await menu.get_by_role("button", name="Skip → Done").click()
    dialog = alice.page.get_by_test_id("action-dialog")
    await expect(dialog.get_by_role("heading")).to_have_text("Skip: Paint")
    await dialog.get_by_role("button", name="Preview").click()
    await expect(dialog.get_by_test_id("preview")).to_contain_text("Paint will be Done (completed)")
    await dialog.get_by_role("button", name="Confirm Skip").click()
    await expect(card_names(alice.page, "done")).to_have_text(["Paint"])


async def test_an_action_carries_data_and_documents(servers: tuple[Serve, Serve], open_page):
    """alice comments on Labour with a JSON object and two files, sent with the action at once."""
    first, _ = servers
    ids = demo_ids(first, first.login("alice"))
    alice = await open_page(first, width=390)
    await alice.sign_in("alice")
    await alice.page.goto(f"{first.url}/#/item/{ids['Labour']}")
    await alice.page.get_by_role("button", name="Comment", exact=True).click()
    dialog = alice.page.get_by_test_id("action-dialog")
    await dialog.get_by_role("textbox", name="Comment").fill("Timesheets for week 12")
    await dialog.get_by_text("Data and documents").click()
    await dialog.get_by_role("textbox", name="Data").fill('["not", "an object"]')
    await dialog.get_by_role("button", name="Preview").click()
    await expect(dialog.locator("[data-code=INVALID_INPUT]")).to_contain_text("JSON object")
    await dialog.get_by_role("textbox", name="Data").fill('{"week": 12}')
    await dialog.get_by_label("Documents").set_input_files(
        [
            {"name": "week-12-mon.txt", "mimeType": "text/plain", "buffer": b"8 hours"},
            {"name": "week-12-tue.txt", "mimeType": "text/plain", "buffer": b"7.5 hours"},
        ]
    )
    await dialog.get_by_role("button", name="Preview").click()
    await expect(dialog.get_by_test_id("preview")).to_contain_text("Labour will be")
    await alice.axe("action dialog with documents")
    await dialog.get_by_role("button", name="Confirm Comment").click()
    await expect(dialog).to_have_count(0)
    documents = alice.page.get_by_test_id("document")
    await expect(documents.filter(has_text="week-12-mon.txt")).to_have_count(1)
    await expect(documents.filter(has_text="week-12-tue.txt")).to_have_count(1)
    history = alice.page.get_by_test_id("history-entry").filter(has_text="Alice Analyst commented on Labour")
    await expect(history.filter(has_text="Timesheets for week 12")).to_have_count(1)
