"""The administrator's screens in Chromium at a tablet's width (768 px): a user made and put in a
new group, a workflow spec refused with its findings at their lines and then defined, its
diagram shown; a permission granted and revoked; axe-core on each screen."""

import re

import httpx
from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.browser import demo_ids

BAD_SPEC = """short_name: dock_check
roles:
  inspector:
    callbacks: [creation_user]
states:
  open: {}
  shut: {terminal: true}
actions:
  start:
    trigger: init
    new_state: open
  close:
    assigned_role: inspector
    assigned_states: [open]
    new_state: nowhere
"""

GOOD_SPEC = BAD_SPEC.replace("nowhere", "shut")


async def test_an_admin_makes_a_user_a_group_and_a_workflow(servers: tuple[Serve, Serve], open_page):
    first, _ = servers
    admin = await open_page(first, width=768)
    await admin.sign_in("admin")
    page = admin.page
    await page.get_by_role("link", name="Admin").click()

    form = page.get_by_role("form", name="New user")
    await form.get_by_label("Login").fill("erin")
    await form.get_by_label("Password").fill("erin-password-1")
    await form.get_by_label("Full name").fill("Erin Engineer")
    await form.get_by_role("button", name="Create user").click()
    await expect(page.get_by_test_id("users").locator('tr[data-login="erin"]')).to_contain_text("Erin Engineer")
    await form.get_by_label("Login").fill("erin")
    await form.get_by_label("Password").fill("erin-password-2")
    await form.get_by_role("button", name="Create user").click()
    await expect(form.locator(".field-errors")).to_be_visible()  # the login is taken: said at the form
    await admin.axe("users")

    await page.get_by_role("link", name="Groups").click()
    await expect(page.get_by_test_id("group").filter(has_text="Reviewers")).to_contain_text("Carol Controller")
    form = page.get_by_role("form", name="New group")
    await form.get_by_label("Group name").fill("surveyors")
    await form.get_by_label("Display name").fill("Surveyors")
    await form.get_by_role("button", name="Create group").click()
    group = page.get_by_test_id("group").filter(has_text="Surveyors")
    await group.get_by_label("New member of Surveyors").select_option(label="Erin Engineer")
    await group.get_by_role("button", name="Add").click()
    await expect(group.get_by_role("button", name="Remove Erin Engineer from Surveyors")).to_be_visible()
    await admin.axe("groups")
    await page.get_by_label("Find a group").fill("survey")
    await expect(page.get_by_test_id("group")).to_have_count(1)
    await expect(page.get_by_test_id("group")).to_contain_text("Erin Engineer")  # read back from the server

    await page.get_by_role("link", name="Workflows").click()
    form = page.get_by_role("form", name="Define a workflow")
    await form.get_by_label("Spec", exact=True).fill(BAD_SPEC)
    await form.get_by_role("button", name="Check").click()  # validateWorkflow: defines nothing
    finding = form.get_by_test_id("findings").locator("[data-severity=ERROR]").filter(has_text="nowhere")
    await expect(finding).to_contain_text("line 15: new_state: nowhere")  # in place: the spec's line
    await admin.axe("workflow findings")
    await form.get_by_role("button", name="Define").click()  # refused: the same finding
    await expect(finding).to_contain_text("line 15: new_state: nowhere")
    await expect(form.get_by_test_id("defined")).to_have_text("")
    await form.get_by_label("Spec", exact=True).fill(GOOD_SPEC)
    await form.get_by_role("button", name="Check").click()
    await expect(form.get_by_test_id("defined")).to_have_text("No errors: it can be defined.")
    await form.get_by_role("button", name="Define").click()
    await expect(form.get_by_test_id("defined")).to_have_text("Defined dock_check v1.")
    await expect(form.locator("[data-severity=ERROR]")).to_have_count(0)
    # listed at once, without a reload
    await page.get_by_role("button", name="Show dock_check v1").click()
    detail = page.get_by_test_id("workflow-detail")
    await expect(detail.locator("svg")).to_contain_text("shut", timeout=30_000)  # Mermaid draws it once loaded
    await admin.axe("workflows")
    await admin.screenshot("admin-workflows-768")
    assert admin.foreign_requests() == []
    assert admin.policy_violations() == []


async def test_a_permission_is_granted_and_revoked(servers: tuple[Serve, Serve], open_page):
    first, _ = servers
    ids = demo_ids(first, first.login("alice"))
    alice = await open_page(first, width=390)
    await alice.sign_in("alice")
    await alice.page.get_by_role("link", name="Permissions of Intranet").click()
    page = alice.page
    grant = page.get_by_role("form", name="Grant a permission")
    await grant.get_by_label("Permission").select_option("project.viewHistory")
    await grant.get_by_label("To").select_option(label="Carol Controller (carol)")
    await grant.get_by_role("button", name="Grant").click()
    row = page.get_by_test_id("grants").locator('tr[data-intent="project.viewHistory"]')
    await expect(row.locator(f'[data-party="{ids["carol"]}"]')).to_have_count(1)
    await alice.axe("permissions at 390 px")
    await row.get_by_role("button", name='Revoke "may read its history" from Carol Controller').click()
    await expect(row.locator(f'[data-party="{ids["carol"]}"]')).to_have_count(0)
    # The last holder of grantPermission keeps it: the server's refusal is shown.
    keep = page.get_by_test_id("grants").locator('tr[data-intent="project.intent.grantPermission"]')
    await keep.get_by_role("button", name=re.compile('^Revoke "may grant permissions"')).first.click()
    await expect(page.locator("[data-code=LAST_GRANT_HOLDER]")).to_be_visible()
    await expect(keep.get_by_role("button")).to_have_count(1)


async def test_an_admin_gives_a_service_user_an_api_token_and_revokes_it(servers: tuple[Serve, Serve], open_page):
    """The "API tokens" panel: a service user made without a password, a token made for it whose
    secret is shown once and works, listed without it, then revoked: refused from then on."""
    first, _ = servers
    admin = await open_page(first, width=390)
    await admin.sign_in("admin")
    page = admin.page
    await page.get_by_role("link", name="Admin").click()

    form = page.get_by_role("form", name="New user")
    await form.get_by_label("Service user").check()
    await expect(form.get_by_label("Password")).to_have_count(0)  # a service user has none
    await form.get_by_label("Login").fill("erp-bot")
    await form.get_by_role("button", name="Create user").click()
    row = page.get_by_test_id("users").locator('tr[data-login="erp-bot"]')
    await expect(row).to_contain_text("service")

    await row.get_by_role("button", name="API tokens of erp-bot").click()
    panel = page.get_by_test_id("api-tokens")
    await expect(panel).to_contain_text("No API tokens.")
    make = panel.get_by_role("form", name="New API token for erp-bot")
    await make.get_by_label("Token name").fill("nightly import")
    await make.get_by_label("Scope").select_option("EXECUTE")
    await make.get_by_role("button", name="Create token").click()
    secret = panel.get_by_test_id("token-secret")
    await expect(secret).to_contain_text("copy it now, it is not shown again")
    token = (await secret.locator("code").text_content() or "").strip()
    assert token.startswith("cw_")
    listed = panel.locator('tr[data-token="nightly import"]')
    await expect(listed).to_contain_text("EXECUTE")
    await expect(listed).to_contain_text("never")
    await admin.axe("API tokens at 390 px")

    async with httpx.AsyncClient(base_url=first.url) as http:
        viewer = await http.post(
            "/graphql", json={"query": "{ viewer { login } }"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert viewer.json()["data"] == {"viewer": {"login": "erp-bot"}}
        await row.get_by_role("button", name="API tokens of erp-bot").click()  # closed, and opened afresh
        await row.get_by_role("button", name="API tokens of erp-bot").click()
        await expect(listed).to_be_visible()
        await expect(panel.get_by_test_id("token-secret")).to_have_count(0)  # never shown again
        assert token not in (await panel.text_content() or "")
        await listed.get_by_role("button", name="Revoke nightly import").click()
        await expect(panel).to_contain_text("No API tokens.")
        refused = await http.post(
            "/graphql", json={"query": "{ viewer { login } }"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert refused.json()["errors"][0]["message"] == "The token was revoked (logged out): log in again."
    assert admin.foreign_requests() == []
    assert admin.policy_violations() == []
