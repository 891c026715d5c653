"""A new subproject on an older version of its workflow, chosen in the dashboard's form: the
states shown follow the version chosen, and the subproject's items take that version."""

import re

from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.documents import DEFINE

SUBPROJECT_VERSION = """query($id: ID!) { node(id: $id) { ... on Subproject { workflow { shortName version } } } }"""


def ferry_spec(last_state: str) -> dict:
    return {
        "short_name": "ferry_check",
        "roles": {"inspector": {"callbacks": ["creation_user"]}},
        "states": {"open": {}, last_state: {"terminal": True}},
        "actions": {
            "start": {"trigger": "init", "new_state": "open"},
            "close": {"assigned_role": "inspector", "assigned_states": ["open"], "new_state": last_state},
        },
    }


async def test_a_subproject_is_made_on_the_version_chosen(servers: tuple[Serve, Serve], open_page):
    first, _ = servers
    admin = first.login("admin")
    for last_state in ("moored", "sailed"):  # version 1 ends in moored, version 2 in sailed
        defined = first.gql(DEFINE, {"spec": ferry_spec(last_state)}, token=admin)["defineWorkflow"]
        assert defined["userErrors"] == [], defined
    alice = await open_page(first, width=1400)
    await alice.sign_in("alice")
    page = alice.page
    await page.get_by_role("button", name="New project").click()
    form = page.get_by_role("form", name="New project")
    await form.get_by_label("Name").fill("Ferries")
    await form.get_by_role("button", name="Create project").click()
    await expect(form).to_have_count(0)
    await page.get_by_role("button", name="New subproject in Ferries").click()
    form = page.get_by_role("form", name="New subproject")
    await form.get_by_label("Name").fill("Old checks")
    await form.get_by_label("Workflow").select_option(value="ferry_check")
    await expect(form.get_by_test_id("workflow-states")).to_contain_text("open → sailed")  # the newest
    await form.get_by_label("Version").select_option(label="v1")
    await expect(form.get_by_test_id("workflow-states")).to_contain_text("open → moored")
    await alice.axe("new subproject dialog, an older version chosen")
    await form.get_by_role("button", name="Create subproject").click()
    await expect(page.get_by_role("heading", name="Old checks", level=1)).to_be_visible()
    subproject = re.search(r"#/subproject/(\w+)", page.url).group(1)
    made = first.gql(SUBPROJECT_VERSION, {"id": subproject}, token=admin)["node"]
    assert made["workflow"] == {"shortName": "ferry_check", "version": 1}
