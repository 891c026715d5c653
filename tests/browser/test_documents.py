"""Documents on the item page in Chromium: alice attaches an invoice, sees it listed with its
SHA-256, downloads it byte-identical and removes it, while bob — who may only view the item —
watches the list follow her live, with no upload or remove control of his own. A file over the
server's limit is refused with the server's sentence, and nothing is listed."""

import hashlib
from pathlib import Path

from playwright.async_api import expect

from tests.fixtures.browser import DOCUMENT_LIMIT, GRANT_ERRORS, demo_ids

CREATE_CHIMNEY = """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "Chimney",
  amountType: "ALLOCATED", amount: "2300"}) { workflowItem { id } userErrors { code } } }"""

# Not text, not a round size, and with every byte value: a re-encoding or a truncation shows.
INVOICE = bytes(range(256)) * 40 + b"Invoice 2031-117: chimney, 2300 EUR\n"


async def test_alice_attaches_downloads_and_removes_a_document_bob_watches(servers, open_page, tmp_path: Path):
    first, second = servers
    alice_token = first.login("alice")
    ids = demo_ids(first, alice_token)
    created = first.gql(CREATE_CHIMNEY, {"s": ids["Roof"]}, token=alice_token)["createWorkflowItem"]
    assert created["userErrors"] == []
    item = created["workflowItem"]["id"]
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        granted = first.gql(GRANT_ERRORS, {"r": item, "i": intent, "p": ids["bob"]}, token=alice_token)
        assert granted["grantPermission"]["userErrors"] == []

    bob = await open_page(second)  # on PostgreSQL another server process than alice's
    await bob.sign_in("bob")
    await bob.page.goto(f"{second.url}/#/item/{item}")
    await expect(bob.page.get_by_test_id("documents")).to_contain_text("No documents attached.")
    await expect(bob.page.locator("body")).to_have_attribute("data-live", "live")

    alice = await open_page(first)
    await alice.sign_in("alice")
    await alice.page.goto(f"{first.url}/#/item/{item}")
    documents = alice.page.get_by_test_id("documents")
    await expect(documents).to_contain_text("No documents attached.")

    # Over the servers' limit (DOCUMENT_LIMIT): the server's sentence, nothing listed.
    await documents.get_by_label("Attach a file").set_input_files(
        {"name": "scan.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.4\n" + b"0" * DOCUMENT_LIMIT}
    )
    await documents.get_by_role("button", name="Upload").click()
    refusal = documents.locator(".upload .field-errors")
    await expect(refusal.locator("[data-code=TOO_LARGE]")).to_contain_text(f"larger than the limit of {DOCUMENT_LIMIT}")
    assert "scan.pdf" not in await documents.inner_text()
    await expect(documents.get_by_test_id("document")).to_have_count(0)

    await documents.get_by_label("Attach a file").set_input_files(
        {"name": "invoice 2031-117.bin", "mimeType": "application/octet-stream", "buffer": INVOICE}
    )
    await documents.get_by_role("button", name="Upload").click()
    row = documents.get_by_test_id("document")
    await expect(row).to_have_count(1)
    await expect(refusal).to_have_count(0)
    await expect(row).to_contain_text("invoice 2031-117.bin")
    await expect(row).to_contain_text("10 KB")  # 10,276 bytes
    digest = hashlib.sha256(INVOICE).hexdigest()
    sha = row.get_by_test_id("document-sha256")
    await expect(sha).to_have_text(digest[:12] + "…")
    await expect(sha).to_have_attribute("title", digest)
    await expect(row).to_contain_text("Alice Analyst")

    async with alice.page.expect_download() as download_info:
        await row.get_by_role("link", name="invoice 2031-117.bin").click()
    download = await download_info.value
    assert download.suggested_filename == "invoice 2031-117.bin"
    saved = tmp_path / "downloaded"
    await download.save_as(saved)
    assert saved.read_bytes() == INVOICE

    # bob's page followed live (document_added), with neither control for him.
    bob_row = bob.page.get_by_test_id("document")
    await expect(bob_row).to_contain_text("invoice 2031-117.bin")
    await expect(bob_row.get_by_test_id("document-sha256")).to_have_attribute("title", digest)
    await expect(bob.page.get_by_label("Attach a file")).to_have_count(0)
    await expect(bob_row.get_by_role("button", name="Remove")).to_have_count(0)

    await row.get_by_role("button", name="Remove invoice 2031-117.bin").click()
    await row.get_by_role("button", name="Confirm removal").click()
    await expect(row).to_have_attribute("data-removed", "true")
    await expect(row.get_by_test_id("document-removed")).to_be_visible()
    await expect(row.get_by_role("button", name="Remove")).to_have_count(0)
    await expect(bob_row).to_have_attribute("data-removed", "true")  # live, document_removed
    await expect(bob_row.get_by_role("link")).to_have_count(0)  # his link stopped working
    await alice.screenshot("item-documents")
    for page in (alice, bob):
        assert page.foreign_requests() == []
        assert page.policy_violations() == []
